// Exhaustive exploration: for each plan of a fault, every schedule the database allows,
// found by depth-first search over the scheduling choices. Each schedule is replayed from
// a freshly reset database: run the choices made so far, take the lowest-numbered
// eligible instance after them, and on the way back try the next eligible instance at the
// deepest step that has one. Runs are deterministic, so a prefix always leads to the same
// choices, and every complete schedule is run exactly once.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "explore/faults.h"
#include "explore/outcome.h"
#include "explore/plan.h"
#include "explore/scheduler.h"
#include "world/table_probe.h"

namespace dedupsim::explore {

struct VariantResult {
  std::string variant;
  int64_t schedules = 0;
  int64_t pruned = 0;  // runs the reduction ended early: every schedule through them was run
  size_t longest = 0;  // steps in the longest schedule
  OutcomeCounts counts{};
};

// A failing schedule, enough to replay it: the plan (by index among the fault's plans)
// and the instance that moved at each step.
struct Counterexample {
  size_t plan_index = 0;
  std::string variant;
  std::vector<int> picks;
  std::vector<std::string> steps;
  Outcome outcome = Outcome::kOnce;
  Figures figures;
};

struct CellResult {
  const Strategy* strategy = nullptr;
  const Fault* fault = nullptr;
  int64_t schedules = 0;
  int64_t steps = 0;  // summed over its schedules
  int64_t pruned = 0;
  OutcomeCounts counts{};
  std::vector<VariantResult> variants;
  // The failing schedule with the fewest steps (the first found, on a tie).
  std::optional<Counterexample> shortest;

  int64_t Failing() const { return schedules - counts[Index(Outcome::kOnce)]; }
  // No schedule broke the invariant (once or reconcile everywhere).
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
  bool one_cpu = true;  // see SchedulerOptions::one_cpu
  WorldSize world{};    // the concurrent fault's copies and instances
  // When a blocked instance is offered again. Default (nullopt): kAfterRelease when
  // reducing with the WAL journal, else kAfterAnyStep (see RetryRule).
  std::optional<RetryRule> retry{};
  // Explore on this PostgreSQL schema (null: a temporary SQLite file); see SchedulerOptions.
  const PgDatabase* postgres = nullptr;
  Isolation isolation = Isolation::kReadCommitted;
  // Called after every schedule run by ExploreCell/ExploreMatrix (may be empty).
  ExploreProgressFn progress{};
};

RetryRule RetryRuleFor(const ExploreOptions& options);

// The index of the cell whose shortest failing schedule has the fewest steps (the earlier
// cell on a tie), or nullopt when no cell has a failing schedule.
std::optional<size_t> ShortestFailingCell(const std::vector<CellResult>& cells);

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

  // Every schedule of every plan of the fault. Each cell explored counts one done for
  // options().progress, of the total said by ExpectCells (ExploreMatrix says its own).
  CellResult ExploreCell(const Strategy& strategy, const Fault& fault);
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
  // The same, and after every step the replay records, the tables of the database (and of
  // the second file, when there is one) as a reader sees them then, read from the files
  // by a probe connection of its own (the step-through page's tables).
  ScheduleResult ReplayShortest(const CellResult& cell, Recorder* recorder,
                                std::vector<TablesSnapshot>* tables);

  // The steps of one clean first delivery, as crash points would name them.
  std::vector<std::string> CleanDeliverySteps(const Strategy& strategy);
  // Throws std::logic_error when the strategy's crash_points differ from those steps.
  void CheckCrashPoints(const Strategy& strategy);

 private:
  ExploreOptions options_;
  ExploreProgress progress_;
  std::vector<const Strategy*> strategies_;  // the table's, then the extra ones
  Scheduler scheduler_;
  std::set<const Strategy*> checked_;
};

}  // namespace dedupsim::explore
