// dedupsim run's arguments as parsed (cli/run_command.cpp reads the command line into them),
// and the run itself: cli/run_plan.h checks what to run before anything starts,
// cli/run_execute.cpp sets up the backend, the broker and the clock and runs and prints.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lesson/scenario.h"

namespace dedupsim::cli {

struct RunArgs {
  std::vector<std::string> names;
  std::vector<std::string> files;  // --file: scenario files or folders of them
  std::string db;
  std::string format = "text";
  RunOptions options;  // the lesson options (lesson/options.h), read into it as parsed
  bool check = false;
  int test_only_expect_hold_ms = -1;  // tests only: --check compares with this hold's expectation
  bool trace = false;
  std::string journal = "wal";
  std::string synchronous = "normal";
  std::string diagram;   // "" or "mermaid"
  std::string timeline;  // SVG file to write, or ""
  std::string html;      // step-through page to write, or ""
  std::string color = "auto";
  int64_t seed = -1;  // -1: ids from the system's randomness and the wall clock
  std::string backend = "sqlite";
  std::string dsn;                     // postgres: an existing server; "": a throwaway cluster
  std::string pg_schema = "dedupsim";  // postgres: the schema dedupsim creates and owns
  std::string isolation = "read-committed";
  std::string broker = "sim";
  std::string broker_url;  // nats, rabbitmq: a server the user runs; "": a private one
  bool given_db = false, given_journal = false, given_isolation = false, given_pg_schema = false;
  // Set after parsing: the lesson options given (their flags).
  std::vector<std::string> given;
  std::string dedup_window_text;  // --dedup-window as typed, when given
  bool Given(std::string_view flag) const {
    return std::find(given.begin(), given.end(), flag) != given.end();
  }
};

// Runs the scenarios args names (and the lessons of its --file) and prints their lines;
// returns an ExitStatus (cli/exit_status.h). Every usage error is found before anything
// runs (exit 2, one line); a database, broker or process failure escapes as its error.
int Run(const RunArgs& args);

}  // namespace dedupsim::cli
