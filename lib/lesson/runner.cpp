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

const std::vector<ScenarioOption>& ScenarioOptions() {
  static const std::vector<ScenarioOption> options{
      {"--crash-mode", kHasCrash, &GivenOptions::crash_mode, "it has no crash point"},
      {"--instances", kHasInstances, &GivenOptions::instances, "it runs a single consumer instance"},
      {"--deliveries", kRepeatsDelivery, &GivenOptions::deliveries,
       "its deliveries are fixed by the lesson"},
      {"--hold-ms", kHasHold, &GivenOptions::hold, "it runs no instances at the same time"},
      {"--stagger-ms", kHasHold, &GivenOptions::hold, "it runs no instances at the same time"},
      {"--max-deliveries", kHasMaxDeliveries, &GivenOptions::max_deliveries,
       "it has no broker delivery limit to reach"},
      {"--retention-days", kHasRetention, &GivenOptions::retention, "it runs no Inbox cleanup"},
      {"--dedup-window", kHasDedupWindow, &GivenOptions::dedup_window,
       "its broker does no send-side duplicate detection"},
      {"--lock-max-age", kHasLockMaxAge, &GivenOptions::lock_max_age, "it takes no leased claim"},
      {"--store-size", kHasStoreSize, &GivenOptions::store_size, "it keeps no bounded dedup store"},
      {"--idle-timeout-ms", kHasServerTimeouts, &GivenOptions::server_timeouts,
       "no consumer of it hangs holding a key"},
      {"--lock-timeout-ms", kHasServerTimeouts, &GivenOptions::server_timeouts,
       "no consumer of it hangs holding a key"},
  };
  return options;
}

const ScenarioOption* FindScenarioOption(std::string_view option) {
  for (const ScenarioOption& o : ScenarioOptions()) {
    if (o.option == option) return &o;
  }
  return nullptr;
}

std::optional<std::string> OptionMisfit(const Scenario& s, const GivenOptions& given) {
  for (const ScenarioOption& o : ScenarioOptions()) {
    if (given.*o.given && !(s.traits & o.trait)) {
      // --hold-ms and --stagger-ms are one given flag: name both.
      const std::string_view name = o.given == &GivenOptions::hold ? "--hold-ms/--stagger-ms" : o.option;
      return fmt::format("{} does not apply to scenario '{}': {}", name, s.name, o.why);
    }
  }
  return std::nullopt;
}

}  // namespace dedupsim
