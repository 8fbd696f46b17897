// Seeded random exploration: larger plans than the matrix's (three or four instances, up
// to three orders, duplicates, producer resends, sometimes the second subscriber, crashes
// at random points) run under random scheduling choices. Run k of seed N is made from N
// and k alone, so `--seed N --replay K` runs exactly the same plan and schedule again.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "explore/explorer.h"
#include "explore/outcome.h"
#include "explore/plan.h"
#include "explore/scheduler.h"

namespace dedupsim::explore {

// Which faults a random plan may mix in, named as the matrix's columns. Without
// concurrent, every delivery goes to one instance, in turn.
struct RandomMix {
  bool duplicate = true;           // the broker hands out extra copies
  bool crash = true;               // attempts die at random crash points
  bool concurrent = true;          // 3 or 4 instances at once
  bool producer_duplicate = true;  // the producer resends under a new MessageId
  bool second_subscriber = true;   // sometimes the partner subscribes too
  bool lost_ack = true;            // an ack is lost; another instance gets it later

  // From fault names (faults.h); an empty list means all.
  static RandomMix From(const std::vector<std::string>& faults);
  std::vector<std::string> Names() const;  // the faults mixed in
  bool All() const;
};

// The plan of run `run` for strategy. Its shape (instances, orders, copies, which
// deliveries crash) depends only on seed, run and mix; a crash point is picked among the
// strategy's own points.
Plan RandomPlan(const Strategy& strategy, uint64_t seed, int64_t run, const RandomMix& mix = {});

// Runs run `run` of seed (plan and scheduling choices), traced into recorder when given.
ScheduleResult RunRandom(Scheduler& scheduler, const Strategy& strategy, uint64_t seed, int64_t run,
                         const RandomMix& mix = {}, Recorder* recorder = nullptr);

// "3 instances, 2 orders; A: m1 inbox, m2 inbox (crash at COMMIT); B: ..."
std::string DescribePlan(const Plan& plan);

// For one fault of the mix: the runs whose plan held it and those whose plan did not, and
// how many of each did not end once.
struct FaultTally {
  int64_t runs_with = 0;
  int64_t failing_with = 0;
  int64_t runs_without = 0;
  int64_t failing_without = 0;
};

struct RandomRow {
  const Strategy* strategy = nullptr;
  int64_t runs = 0;
  int64_t steps = 0;  // summed over the runs
  OutcomeCounts counts{};
  std::vector<int64_t> failing;                // run numbers that did not end once, in order
  std::map<std::string, FaultTally> by_fault;  // by fault name, for every fault of the mix

  // The faults every failing run held while some runs without them ran and none of those
  // failed: what the failures came from, as measured (empty when none or no failure).
  std::vector<std::string> FailuresCameFrom() const;
};

struct RandomResult {
  uint64_t seed = 0;
  RandomMix mix;
  int64_t runs = 0;  // per strategy
  JournalMode journal = JournalMode::kWal;
  std::vector<RandomRow> rows;
  double elapsed_ms = 0;

  int64_t TotalRuns() const { return runs * static_cast<int64_t>(rows.size()); }
  double RunsPerSecond() const;
};

// progress (may be empty) is told after every run: runs done of strategies x runs.
RandomResult ExploreRandom(Scheduler& scheduler, std::span<const Strategy* const> strategies,
                           uint64_t seed, int64_t runs, const RandomMix& mix = {},
                           const ExploreProgressFn& progress = nullptr);

}  // namespace dedupsim::explore
