// Runs a scenario file (lib/files/scenario_file.h) as a scenario: stocks the book, delivers
// the file's messages to its consumers through the scenarios' own machinery (OpenTraced,
// the crash runner for `crash at`, the racing pair for `race = true`), reads its figures on
// the probe connection and renders its line; Outcome::expected holds what --check compares.
#pragma once

#include "files/scenario_file.h"
#include "lesson/scenario.h"

namespace dedupsim {

// What the command line said beyond RunOptions: whether --hold-ms and --stagger-ms were
// given (else the file's own hold and stagger apply).
struct FileRunOverrides {
  bool hold = false;
  bool stagger = false;
};

// Throws files::FileError for a figure that cannot be read.
Outcome RunScenarioFile(const files::ScenarioFile& file, ScenarioEnv& env,
                        const FileRunOverrides& overrides);

// A Scenario for the runner and the views (name, tag, summary, lesson ...), valid while
// file and overrides are.
Scenario AsScenario(const files::ScenarioFile& file, const FileRunOverrides& overrides);

}  // namespace dedupsim
