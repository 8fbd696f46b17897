// dedupsim: a teaching simulator for idempotent message consumers. This file only parses
// the command line, dispatches to the chosen command, and maps failures to exit statuses.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "exit_status.h"
#include "interrupt.h"
#include "sqlite/error.h"

namespace {

constexpr const char* kExitCodes =
    "Exit status: 0 ran and every check held; 1 a check failed; 2 usage error (unknown\n"
    "scenario, bad option or value, a bad consumer or scenario file:\n"
    "FILE:LINE:COLUMN, an output file that is a file the run uses or not .svg); 3 database\n"
    "error (not a dedupsim database, altered schema, in use by another dedupsim, locked,\n"
    "unwritable), an output file that cannot be written, or a child process that died\n"
    "unplanned; 130 interrupted (SIGINT or SIGTERM): children killed, every file the run\n"
    "created removed, a kept --db left valid.";

}  // namespace

int main(int argc, char** argv) {
  using namespace dedupsim;
  cli::InstallInterruptHandling();  // before any thread or child exists
  CLI::App app{"dedupsim: a teaching simulator for idempotent message consumers on SQLite",
               "dedupsim"};
  app.set_version_flag("--version", std::string("dedupsim ") + DEDUPSIM_VERSION);
  app.require_subcommand(1, 1);
  app.footer(kExitCodes);

  std::string color = "auto";  // read by the commands that color their output
  app.add_option("--color", color, "Color run's lines: auto (on a terminal, unless NO_COLOR is set), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));

  std::vector<cli::Command> commands{
      cli::AddListCommand(app),
      cli::AddRunCommand(app),
      cli::AddExplainCommand(app),
      cli::AddDocsCommand(app),
      cli::AddCleanupCommand(app),
      cli::AddExploreCommand(app),
      cli::AddCheckCommand(app),
      cli::AddBenchCommand(app),
      cli::AddSoakCommand(app),
  };
  for (const cli::Command& command : commands) command.sub->footer(kExitCodes);
  cli::CaptureDefaults(app);

  // CLI11 would only say that a subcommand is required; name the word it did not know.
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    std::string names;
    for (const cli::Command& command : commands) {
      known |= command.sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + command.sub->get_name();
    }
    if (!known) {
      fmt::print(stderr, "dedupsim: unknown command '{}' (valid: {})\n", argv[1], names);
      return kExitUsage;
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // Point to the help of the command the words were for.
    const std::string help =
        argc > 1 && argv[1][0] != '-' ? fmt::format("dedupsim {} --help", argv[1]) : "dedupsim --help";
    fmt::print(stderr, "dedupsim: {} (see {})\n", e.what(), help);
    return kExitUsage;
  }

  try {
    for (const cli::Command& command : commands) {
      if (command.sub->parsed()) return command.run();
    }
    return kExitUsage;
  } catch (const DatabaseError& e) {
    fmt::print(stderr, "dedupsim: {}\n", e.what());
    return kExitDatabase;
  } catch (const std::exception& e) {
    fmt::print(stderr, "dedupsim: internal error: {}\n", e.what());
    return kExitDatabase;
  }
}
