// Runs two competing consumer instances at the same time, each with its own connection: as
// threads of this process, or as forked child processes that report back through a pipe.
//
// The race follows the options, not the scheduler. The first instance runs until its hold
// point (a hook where it holds what it took, e.g. the write lock at BeforeCommit) and
// announces that moment, R. The second instance, already started and connected, is released
// at R + stagger; the first goes on at R + hold. Events settle what the clock alone cannot:
//  - stagger < hold: the first goes on only once the second is blocked too (its busy
//    handler ran), so the second really meets the first's lock however late it ran;
//  - stagger >= hold: the second starts only after the first instance has ended.
// A starved thread or process changes the timings, never which of the two happens; and the
// second's busy timeout starts only once the first instance has ended, so neither a hold
// longer than that timeout nor a stalled first instance makes it give up. The waits stay
// real SQLite lock waits. Each instance keeps its lock history (when it held the
// write lock, when it was blocked), on the steady clock that threads and forked processes
// share, so a scenario can tell who waited for whom from the intervals.
#pragma once

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hooks.h"
#include "scenario.h"
#include "sqlite/connection.h"

namespace dedupsim {

struct InstanceTask {
  std::string name;  // "A", "B": the trace's instance
  // The consumer's work on the instance's own traced connection; returns what the scenario
  // wants back (e.g. processed: true). Runs in a child in process mode. The first instance
  // runs hold_point at its hold point; the second gets a hook that does nothing.
  std::function<nlohmann::json(Connection&, const Hook& hold_point)> body;
};

struct PairTiming {
  std::chrono::milliseconds hold{0};     // the first goes on this long after its hold point
  std::chrono::milliseconds stagger{0};  // the second starts this long after it
  // stagger < hold: the first waits until the second is blocked on a lock. Set false where
  // the second meets no lock (it would only time out).
  bool second_blocks = true;
};

struct InstanceResult {
  std::string name;
  int pid = 0;
  nlohmann::json value;
  std::chrono::microseconds elapsed{0};  // from its release to its end
  BusyStats busy;                        // what its busy handler saw
  LockHistory locks;                     // its write-lock holds and blocked waits
};

// Runs first and second per env.options.instances and returns their results in that order.
// Throws the first instance's error (thread mode), or UnplannedDeath when a child died.
std::vector<InstanceResult> RunInstancePair(ScenarioEnv& env, const InstanceTask& first,
                                            const InstanceTask& second, const PairTiming& timing);

// A forked instance whose report, one JSON object ({"value", "elapsedUs", "events", ...}),
// arrives on fd; CollectChildReports closes fd and reaps pid.
struct ChildInstance {
  std::string name;
  int pid = -1;
  int fd = -1;
};
struct ChildReport {
  InstanceResult result;   // name, pid, value and elapsed; the rest is the caller's
  nlohmann::json message;  // the whole report, for what the caller's children add
};
// Reads each child's report in order, reaps it and records its trace events. Throws
// UnplannedDeath naming the first child that failed or sent no report.
std::vector<ChildReport> CollectChildReports(ScenarioEnv& env,
                                             const std::vector<ChildInstance>& children);

// Milliseconds from the trace's origin to t (for figures).
double MsSinceOrigin(const ScenarioEnv& env, SteadyTime t);

}  // namespace dedupsim
