#include "runner.h"

#include <fmt/format.h>

#include "trace_json.h"

namespace dedupsim {

ScenarioResult RunScenario(const Scenario& scenario, ScenarioEnv& env, bool check) {
  env.recorder.Clear();
  ScenarioResult result;
  result.scenario = &scenario;
  result.outcome = scenario.run(env);
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

bool OutcomeAsExpected(const ScenarioResult& result, const RunOptions& options) {
  if (result.checked) return result.differences.empty();
  if (!result.outcome.expected.is_null()) {
    return Differences(result.scenario->name, result.outcome.expected, result.outcome.figures).empty();
  }
  if (result.scenario == nullptr || result.scenario->expected == nullptr) return true;
  return Differences(result.scenario->name, result.scenario->expected(options), result.outcome.figures).empty();
}

std::vector<std::string> Differences(std::string_view scenario,
                                     const nlohmann::ordered_json& expected,
                                     const nlohmann::ordered_json& figures) {
  std::vector<std::string> out;
  for (const auto& [key, want] : expected.items()) {
    if (!figures.contains(key)) {
      out.push_back(fmt::format("{}: {} is missing, expected {}", scenario, key, want.dump()));
    } else if (figures[key] != want) {
      out.push_back(
          fmt::format("{}: {} is {}, expected {}", scenario, key, figures[key].dump(), want.dump()));
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

std::optional<std::string> OptionMisfit(const Scenario& s, const GivenOptions& given) {
  auto misfit = [&](const char* option, const char* why) {
    return fmt::format("{} does not apply to scenario '{}': {}", option, s.name, why);
  };
  if (given.crash_mode && !(s.traits & kHasCrash)) return misfit("--crash-mode", "it has no crash point");
  if (given.instances && !(s.traits & kHasInstances)) {
    return misfit("--instances", "it runs a single consumer instance");
  }
  if (given.deliveries && !(s.traits & kRepeatsDelivery)) {
    return misfit("--deliveries", "its deliveries are fixed by the lesson");
  }
  if (given.hold && !(s.traits & kHasHold)) {
    return misfit("--hold-ms/--stagger-ms", "it runs no instances at the same time");
  }
  if (given.max_deliveries && !(s.traits & kHasMaxDeliveries)) {
    return misfit("--max-deliveries", "it has no broker delivery limit to reach");
  }
  if (given.retention && !(s.traits & kHasRetention)) {
    return misfit("--retention-days", "it runs no Inbox cleanup");
  }
  if (given.dedup_window && !(s.traits & kHasDedupWindow)) {
    return misfit("--dedup-window", "its broker does no send-side duplicate detection");
  }
  if (given.lock_max_age && !(s.traits & kHasLockMaxAge)) {
    return misfit("--lock-max-age", "it takes no leased claim");
  }
  if (given.store_size && !(s.traits & kHasStoreSize)) {
    return misfit("--store-size", "it keeps no bounded dedup store");
  }
  return std::nullopt;
}

}  // namespace dedupsim
