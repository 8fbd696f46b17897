// Runs competing consumer instances at the same time, each with its own connection:
// as threads of this process, or as forked child processes that report back through a
// pipe. Each instance is timed from its start to its end, and keeps what its busy
// handler saw, so a scenario can tell who waited for whom and how long.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenario.h"
#include "sqlite/connection.h"

namespace dedupsim {

struct InstanceTask {
  std::string name;                          // "A", "B": the trace's instance
  std::chrono::milliseconds start_after{0};  // after the first instance started
  // The consumer's work on the instance's own traced connection; returns what the
  // scenario wants back (e.g. processed: true). Runs in a child in process mode.
  std::function<nlohmann::json(Connection&)> body;
};

struct InstanceResult {
  std::string name;
  int pid = 0;
  nlohmann::json value;
  std::chrono::microseconds elapsed{0};  // start of the instance to its end
  BusyStats busy;                        // what its busy handler saw
};

// Runs the tasks per env.options.instances and returns their results in task order.
// Throws the first instance's error (thread mode), or UnplannedDeath when a child died.
std::vector<InstanceResult> RunInstances(ScenarioEnv& env, const std::vector<InstanceTask>& tasks);

}  // namespace dedupsim
