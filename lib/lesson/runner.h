// Runs scenarios and turns their outcomes into results: the figures, the trace events of
// the run, and, when asked, the differences from what the post says must happen.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
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

// Which scenario-specific options the user gave on the command line.
struct GivenOptions {
  bool crash_mode = false;
  bool instances = false;
  bool deliveries = false;
  bool hold = false;  // --hold-ms or --stagger-ms
  bool max_deliveries = false;
  bool retention = false;
  bool dedup_window = false;
  bool lock_max_age = false;
  bool store_size = false;
  bool server_timeouts = false;  // --idle-timeout-ms or --lock-timeout-ms
};

// The options only some scenarios take: the trait a scenario needs for each, which
// GivenOptions field says it was given, and why a scenario without the trait refuses it.
// OptionMisfit refuses by it; the command-line reference lists each option's scenarios.
struct ScenarioOption {
  std::string_view option;  // "--hold-ms"
  unsigned trait;           // ScenarioTraits
  bool GivenOptions::*given;
  std::string_view why;
};
const std::vector<ScenarioOption>& ScenarioOptions();

// The scenario-specific option named option, or null for an option every scenario takes.
const ScenarioOption* FindScenarioOption(std::string_view option);

// A one-line reason when an option was given that this scenario has no use for.
std::optional<std::string> OptionMisfit(const Scenario& scenario, const GivenOptions& given);

}  // namespace dedupsim
