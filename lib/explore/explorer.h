// Exhaustive exploration: for each plan of a fault, every schedule the database allows,
// found by depth-first search over the scheduling choices. Each schedule is replayed from
// a freshly reset database: run the choices made so far, take the lowest-numbered
// eligible instance after them, and on the way back try the next eligible instance at the
// deepest step that has one. Runs are deterministic, so a prefix always leads to the same
// choices, and every complete schedule is run exactly once.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "explore/faults.h"
#include "explore/outcome.h"
#include "explore/plan.h"
#include "explore/scheduler.h"
#include "store/tables_reader.h"

namespace dedupsim::explore {

struct VariantResult {
  std::string variant;
  bool strict = false;  // nothing in the plan calls for reconciliation (Plan::strict)
  int64_t schedules = 0;
  int64_t pruned = 0;  // runs the reduction ended early: every schedule through them was run
  size_t longest = 0;  // steps in the longest schedule
  OutcomeCounts counts{};
};

// A failing schedule, enough to replay it: the plan (by index among the fault's plans)
// and the instance that moved at each step.
struct Counterexample {
  size_t plan_index = 0;
  Plan plan;  // the plan itself (a follow-up plan is not among the fault's first plans)
  std::string variant;
  std::vector<int> picks;
  std::vector<std::string> steps;
  Outcome outcome = Outcome::kOnce;
  Figures figures;
};

// How long a cell may take (dedupsim check's --budget): its plans are explored in order,
// every schedule, until `ordered_until`; what is left of them is then sampled at random
// (seeded) until `sampled_until`, and the cell says it was not exhaustive.
struct CellBudget {
  std::chrono::steady_clock::time_point ordered_until;
  std::chrono::steady_clock::time_point sampled_until;
  uint64_t seed = 1;  // the random walks' seed (with the cell's fault name)
};

struct CellResult {
  const Strategy* strategy = nullptr;
  const Fault* fault = nullptr;
  int64_t schedules = 0;
  // False when the budget ran out: only `schedules` of them were run (explored in order, then
  // `sampled` of them at random), and `estimated` is about how many the search has in all
  // (the ones run in order, and for each plan not finished the number of interleavings a
  // random walk's choices multiply to, averaged: Knuth's estimate).
  bool exhaustive = true;
  int64_t sampled = 0;
  double estimated = 0;  // may be far beyond what an integer holds: 2 copies of 50 steps
  uint64_t sample_seed = 0;
  int64_t steps = 0;  // summed over its schedules
  int64_t pruned = 0;
  OutcomeCounts counts{};
  // Schedules of strict plans that ended reconcile: a flag nothing called for.
  int64_t needless_reconciles = 0;
  // Schedules in which SQLite refused a delivery's write because the transaction had read
  // before another instance wrote (ScheduleResult::stale_refusals), and the plan of the
  // first: a pass here may rest on that refusal, which PostgreSQL does not make.
  int64_t stale_refused = 0;
  std::string stale_variant;
  std::vector<VariantResult> variants;
  // The failing schedule with the fewest steps (the first found, on a tie).
  std::optional<Counterexample> shortest;
  // The same among the schedules that broke the invariant (a reconcile of a strict plan
  // included): what a grader shows. Empty when the cell is safe.
  std::optional<Counterexample> shortest_unsafe;

  int64_t Failing() const { return schedules - counts[Index(Outcome::kOnce)]; }
  // No schedule broke the invariant (once or reconcile everywhere; reconcile only where
  // something called for it).
  bool Safe() const;
};

struct MatrixResult {
  uint64_t seed = 0;
  JournalMode journal = JournalMode::kWal;
  std::vector<const Strategy*> strategies;  // rows
  std::vector<const Fault*> faults;         // columns
  std::vector<CellResult> cells;            // row by row
  int64_t schedules = 0;
  int64_t steps = 0;  // summed over every schedule
  int64_t pruned = 0;
  bool reduced = false;  // explored with the partial-order reduction
  WorldSize world{};
  double elapsed_ms = 0;
  // Where it ran: "" for a SQLite file (see journal), else PostgreSQL's isolation level.
  std::string postgres_isolation;
  // The same rows and columns on the other backend, to mark the cells that differ (null:
  // no comparison). Not owned.
  const MatrixResult* compared = nullptr;

  const CellResult& Cell(size_t row, size_t column) const {
    return cells[row * faults.size() + column];
  }
  double SchedulesPerSecond() const;
};

// How far an exploration has gone, for a progress display (lib prints nothing): the work
// items done of total (cells of the matrix; random runs), and the schedules run so far.
// total is 0 when not known.
struct ExploreProgress {
  int64_t done = 0;
  int64_t total = 0;
  int64_t schedules = 0;
};
using ExploreProgressFn = std::function<void(const ExploreProgress&)>;

struct ExploreOptions {
  uint64_t seed = 1;  // makes the message, order and book ids
  JournalMode journal = JournalMode::kWal;
  Synchronous synchronous = Synchronous::kOff;  // see SchedulerOptions
  bool reuse_connections = true;
  // Partial-order reduction: schedules that differ only in the order of independent steps
  // (steps on different files, hooks, sends, reads of the same file; see Footprint) are
  // one schedule, run once. Off: every interleaving is run (the brute force the tests
  // compare against). The outcomes found, each cell's verdict and the shortest failing
  // length are the same; the counts are of classes of equivalent schedules.
  bool reduce = true;
  // Which reduced search (with reduce): source sets and wakeup trees (optimal DPOR), which
  // starts no run the sleep sets alone would cut short, or the sleep sets alone. Both run
  // one schedule per class; see search.h.
  enum class Search { kSourceSets, kSleepSets };
  Search search = Search::kSourceSets;
  size_t max_steps = 5000;  // a run longer than this ends as an error (SchedulerOptions)
  WorldSize world{};    // the concurrent fault's copies and instances
  // When a blocked instance is offered again. Default (nullopt): kAfterRelease when
  // reducing with the WAL journal, else kAfterAnyStep (see RetryRule).
  std::optional<RetryRule> retry{};
  // The class world (dedupsim check): each fault's graded_plans, and its follow-ups, instead
  // of the lesson world's plans; see faults.h.
  bool graded = false;
  // Explore on this PostgreSQL schema (null: a temporary SQLite file); see SchedulerOptions.
  const ExploreServer* postgres = nullptr;
  // More schemas of the same server, each dedupsim's and empty of other work: ExploreMatrix
  // on PostgreSQL shares the matrix's rows out among postgres and these, each schema
  // explored by a thread of its own with its own scheduler and connections (the server's
  // backends run on the cores while each thread waits for its answers). Each cell is the
  // same whichever schema explores it: every schedule starts from its reset, and a
  // schema's locks are its own. The schemas must outlive the explorer. Empty: one.
  std::vector<const ExploreServer*> postgres_lanes{};
  Isolation isolation = Isolation::kReadCommitted;
  // Called after every schedule run by ExploreCell/ExploreMatrix (may be empty).
  ExploreProgressFn progress{};
};

RetryRule RetryRuleFor(const ExploreOptions& options);

// The index of the cell whose shortest failing schedule has the fewest steps (the earlier
// cell on a tie), or nullopt when no cell has a failing schedule.
std::optional<size_t> ShortestFailingCell(const std::vector<CellResult>& cells);

// A search the scheduler's deadline stopped where it cannot go on (Scheduler::StopAt).
class OutOfTime : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Explorer {
 public:
  // Sets up a scheduler (and its temporary database) for every strategy of the table, and
  // for the extra strategies (consumers read from files), which must outlive the explorer.
  explicit Explorer(ExploreOptions options = {}, std::span<const Strategy* const> extra = {});

  const ExploreOptions& options() const { return options_; }
  Scheduler& scheduler() { return scheduler_; }

  // The fault's plans for the strategy, the same for the same seed.
  std::vector<Plan> Plans(const Strategy& strategy, const Fault& fault) const;

  // Calls each with every schedule of plan, in the search's order: with options().reduce,
  // one schedule per class of schedules that differ only in the order of independent
  // steps. Returns the runs the reduction ended early (0 without it).
  int64_t ForEachSchedule(const Plan& plan, const std::function<void(const ScheduleResult&)>& each);
  // The same, stopping when stop() says so after a schedule; *complete tells whether every
  // schedule was run.
  int64_t ForEachSchedule(const Plan& plan, const std::function<void(const ScheduleResult&)>& each,
                          const std::function<bool()>& stop, bool* complete);

  // Every schedule of every plan of the fault. Each cell explored counts one done for
  // options().progress, of the total said by ExpectCells (ExploreMatrix says its own).
  CellResult ExploreCell(const Strategy& strategy, const Fault& fault,
                         const CellBudget* budget = nullptr);
  void ExpectCells(int64_t total) { progress_.total = total; }
  MatrixResult ExploreMatrix(std::span<const Strategy* const> strategies,
                             std::span<const Fault* const> faults);

  // Runs plan with exactly these choices, traced into recorder when given. nullopt when
  // they are not a complete schedule (a choice not eligible, too few or too many).
  std::optional<ScheduleResult> RunExactly(const Plan& plan, const std::vector<int>& picks,
                                           Recorder* recorder = nullptr);

  // Replays the cell's shortest failing schedule, traced into recorder. Throws
  // std::logic_error when it no longer runs (the explorer would be non-deterministic).
  ScheduleResult ReplayShortest(const CellResult& cell, Recorder* recorder);
  // The same for any counterexample of the cell's (its shortest_unsafe), with the tables
  // after each step when tables is given (see below).
  ScheduleResult Replay(const CellResult& cell, const Counterexample& c, Recorder* recorder,
                        std::vector<TablesSnapshot>* tables = nullptr);
  // The same, and after every step the replay records, the tables of the database (and of
  // the second file, when there is one) as a reader sees them then, read by a connection of
  // the probe's own (the step-through page's tables): on SQLite from the files, on
  // PostgreSQL from the explorer's schema, committed rows only, one snapshot per step.
  ScheduleResult ReplayShortest(const CellResult& cell, Recorder* recorder,
                                std::vector<TablesSnapshot>* tables);

  // The steps of one clean first delivery, as crash points would name them.
  std::vector<std::string> CleanDeliverySteps(const Strategy& strategy);
  // Throws std::logic_error when the strategy's crash_points differ from those steps.
  void CheckCrashPoints(const Strategy& strategy);

 private:
  // Past the budget's ordered search: random walks through the plans not finished, until
  // the budget's end.
  void Sample(CellResult& cell, std::vector<Plan>& plans, std::vector<bool>& done,
              const CellBudget& budget,
              const std::function<void(size_t, const ScheduleResult&)>& count,
              const std::function<void()>& add_variants);

  // ExploreMatrix's rows shared out among options_.postgres (this explorer, on the calling
  // thread) and each of options_.postgres_lanes (an explorer of its own on a thread of its
  // own), a row at a time, each row's cells in cells[row].
  void ExploreRowsInLanes(std::span<const Strategy* const> strategies,
                          std::span<const Fault* const> faults,
                          std::vector<std::vector<CellResult>>& cells);

  ExploreOptions options_;
  ExploreProgress progress_;
  std::vector<const Strategy*> extra_;       // the consumers read from files
  std::vector<const Strategy*> strategies_;  // the table's, then the extra ones
  Scheduler scheduler_;
  std::set<const Strategy*> checked_;
};

}  // namespace dedupsim::explore
