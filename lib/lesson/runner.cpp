#include "lesson/runner.h"

#include <fmt/format.h>

#include "trace/trace_json.h"

namespace dedupsim {

ScenarioResult RunScenario(const Scenario& scenario, ScenarioEnv& env, bool check) {
  env.recorder.Clear();
  ScenarioResult result;
  result.scenario = &scenario;
  result.outcome = scenario.run(env);
  TakeMarks(result.outcome);
  result.events = env.recorder.Events();
  if (check) {
    result.checked = true;
    result.expected = result.outcome.expected.is_null() && scenario.expected != nullptr
                          ? scenario.expected(env.options)
                          : result.outcome.expected;
    result.differences = Differences(scenario.name, result.expected, result.outcome.figures);
  }
  return result;
}

std::vector<std::string> Differences(std::string_view scenario,
                                     const nlohmann::ordered_json& expected,
                                     const nlohmann::ordered_json& figures) {
  std::vector<std::string> out;
  for (const auto& [key, want] : expected.items()) {
    if (!figures.contains(key)) {
      out.push_back(fmt::format("{}: {} is missing, expected {}", scenario, key, want.dump()));
    } else if (figures[key] != want) {
      out.push_back(fmt::format("{}: {} is {}, expected {}", scenario, key, figures[key].dump(),
                                want.dump()));
    }
  }
  return out;
}

nlohmann::ordered_json ResultToJson(const ScenarioResult& result, bool with_events) {
  nlohmann::ordered_json j;
  j["scenario"] = result.scenario->name;
  j["tag"] = result.scenario->tag;
  j["line"] = result.outcome.line;
  for (const auto& [key, value] : result.outcome.figures.items()) j[key] = value;
  if (result.checked) {
    j["check"] = {{"passed", result.differences.empty()},
                  {"expected", result.expected},
                  {"differences", result.differences}};
  }
  if (with_events) j["events"] = EventsToJson(result.events);
  return j;
}

}  // namespace dedupsim
