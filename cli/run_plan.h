// What dedupsim run runs, checked before anything starts: the scenarios named (all and
// everything expanded), the lessons of --file read and checked (a folder: each *.toml in
// it), and every option held to them (a lesson option a scenario named alone does not
// take, a scenario file that does not take one given, --backend postgres with a scenario not
// on it or with SQLite's options, a broker a scenario cannot use, a real broker's
// --dedup-window above 30s, an output that is a file the run uses). Nothing is created or started here: a misfit costs no run.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "file_scenario.h"
#include "files/scenario_file.h"
#include "run_args.h"

namespace dedupsim::cli {

// The lessons of --file, read and checked before anything runs; they and their Scenario
// views live as long as the run.
struct FileLessons {
  std::vector<std::unique_ptr<files::ScenarioFile>> files;
  std::vector<std::unique_ptr<Scenario>> scenarios;
  FileRunOverrides overrides;
};

struct RunPlan {
  std::vector<const Scenario*> scenarios;  // in the order given; --file's lessons last
  FileLessons lessons;                     // what the file scenarios point into
};

// Fills plan from args; returns the one-line usage error (without "dedupsim: ") when the
// run must not start, nullopt when it may.
std::optional<std::string> PlanRun(const RunArgs& args, RunPlan& plan);

}  // namespace dedupsim::cli
