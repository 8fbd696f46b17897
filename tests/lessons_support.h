// Running one scenario in a test: a fresh Fixture per run, the outcome, and the
// differences from what the scenario's Expected says must hold for those options.
#pragma once

#include <string>
#include <vector>

#include "lesson/runner.h"
#include "lesson/scenario.h"
#include "support.h"

namespace dedupsim::testing {

struct LessonRun {
  Outcome outcome;
  std::vector<std::string> differences;
  const nlohmann::ordered_json& figures() const { return outcome.figures; }
};

inline LessonRun RunLesson(const Scenario& scenario, RunOptions options = {}) {
  Fixture fixture(options);
  ScenarioResult result = RunScenario(scenario, fixture.env, /*check=*/true);
  return LessonRun{result.outcome, result.differences};
}

}  // namespace dedupsim::testing
