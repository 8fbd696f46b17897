// Runs scenarios and turns their outcomes into results: the figures, the trace events of
// the run, and, when asked, the differences from what the post says must happen.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "lesson/scenario.h"
#include "trace/trace.h"

namespace dedupsim {

struct ScenarioResult {
  const Scenario* scenario = nullptr;
  Outcome outcome;
  std::vector<TraceEvent> events;
  bool checked = false;
  nlohmann::ordered_json expected;       // what --check compared with
  std::vector<std::string> differences;  // one line per figure that differs
};

// Runs one scenario with a fresh trace; with check, compares its figures with
// scenario.expected(options). Database errors and unplanned deaths propagate.
ScenarioResult RunScenario(const Scenario& scenario, ScenarioEnv& env, bool check);

// "concurrent: reserved is 4, expected 2" for each field of expected that figures differ on.
std::vector<std::string> Differences(std::string_view scenario,
                                     const nlohmann::ordered_json& expected,
                                     const nlohmann::ordered_json& figures);

// The scenario's JSON object: scenario, tag, line, every figure, then check and events
// when present.
nlohmann::ordered_json ResultToJson(const ScenarioResult& result, bool with_events);

}  // namespace dedupsim
