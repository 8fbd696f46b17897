// Running one scenario in a test: a fresh Fixture per run, the outcome, and the
// differences from what the scenario's Expected says must hold for those options.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "lesson/runner.h"
#include "lesson/scenario.h"
#include "scenarios.h"
#include "support.h"

namespace dedupsim::testing {

struct LessonRun {
  Outcome outcome;
  std::vector<std::string> differences;
  const nlohmann::ordered_json& figures() const { return outcome.figures; }
};

// The lesson of the table named name (throws std::invalid_argument when there is none).
inline LessonRun RunLesson(std::string_view name, RunOptions options = {}) {
  const Scenario* scenario = FindScenario(name);
  if (scenario == nullptr) throw std::invalid_argument("no lesson named " + std::string(name));
  Fixture fixture(options);
  ScenarioResult result = RunScenario(*scenario, fixture.env, /*check=*/true);
  return LessonRun{result.outcome, result.differences};
}

}  // namespace dedupsim::testing
