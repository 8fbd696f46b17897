// dedupsim: a teaching simulator for idempotent message consumers. This file only parses
// the command line, dispatches to the chosen command, and maps failures to exit statuses.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <iterator>
#include <string>
#include <vector>

#include "commands.h"
#include "exit_status.h"
#include "interrupt.h"
#include "os/process_error.h"
#include "sqlite/error.h"

namespace {

constexpr const char* kExitCodes =
    "Exit status: 0 ran and every check held; 1 a check failed; 2 usage error (unknown\n"
    "scenario, bad option or value, a bad consumer or scenario file:\n"
    "FILE:LINE:COLUMN, an output file that is a file the run uses or not .svg); 3 database\n"
    "error (not a dedupsim database, altered schema, in use by another dedupsim, locked,\n"
    "unwritable), or an output file that cannot be written; 4 a child process that died\n"
    "unplanned, or a fork or pipe the system refused; 130 interrupted (SIGINT or SIGTERM):\n"
    "children killed, every file the run created removed, a kept --db left valid.";

// Every command, in the order --help lists them; each name is the one its Add function
// gives its subcommand (checked when it is defined).
struct CommandEntry {
  const char* name;
  dedupsim::cli::Command (*add)(CLI::App&);
};
constexpr CommandEntry kCommands[] = {
    {"list", dedupsim::cli::AddListCommand},       {"run", dedupsim::cli::AddRunCommand},
    {"explain", dedupsim::cli::AddExplainCommand}, {"docs", dedupsim::cli::AddDocsCommand},
    {"cleanup", dedupsim::cli::AddCleanupCommand}, {"explore", dedupsim::cli::AddExploreCommand},
    {"check", dedupsim::cli::AddCheckCommand},     {"bench", dedupsim::cli::AddBenchCommand},
    {"soak", dedupsim::cli::AddSoakCommand},
};

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
  app.add_option("--color", color,
                 "Color run's lines: auto (on a terminal, unless NO_COLOR is set), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));

  // A command named first is the only one defined: the options of every other command
  // are not built (about half a millisecond of each run's start). --help, --version,
  // docs (which documents every command) and a word that is not a command define them all.
  std::vector<cli::Command> commands;
  const std::string first = argc > 1 ? argv[1] : "";
  const bool known = std::any_of(std::begin(kCommands), std::end(kCommands),
                                 [&](const CommandEntry& c) { return first == c.name; });
  const bool one = known && first != "docs";
  for (const CommandEntry& entry : kCommands) {
    if (one && first != entry.name) continue;
    commands.push_back(entry.add(app));
    if (commands.back().sub->get_name() != entry.name) {
      fmt::print(stderr, "dedupsim: internal error: command {} is defined as {}\n", entry.name,
                 commands.back().sub->get_name());
      return kExitDatabase;
    }
  }
  for (const cli::Command& command : commands) command.sub->footer(kExitCodes);
  cli::CaptureDefaults(app);

  // CLI11 would only say that a subcommand is required; name the word it did not know.
  if (argc > 1 && argv[1][0] != '-' && !known) {
    std::string names;
    for (const CommandEntry& entry : kCommands) {
      names += (names.empty() ? "" : ", ") + std::string(entry.name);
    }
    fmt::print(stderr, "dedupsim: unknown command '{}' (valid: {})\n", argv[1], names);
    return kExitUsage;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // Point to the help of the command the words were for.
    const std::string help = argc > 1 && argv[1][0] != '-'
                                 ? fmt::format("dedupsim {} --help", argv[1])
                                 : "dedupsim --help";
    fmt::print(stderr, "dedupsim: {} (see {})\n", e.what(), help);
    return kExitUsage;
  }

  try {
    for (const cli::Command& command : commands) {
      if (command.sub->parsed()) return command.run();
    }
    return kExitUsage;
  } catch (const ProcessError& e) {
    fmt::print(stderr, "dedupsim: {}\n", e.what());
    return kExitProcess;
  } catch (const DatabaseError& e) {
    fmt::print(stderr, "dedupsim: {}\n", e.what());
    return kExitDatabase;
  } catch (const std::exception& e) {
    fmt::print(stderr, "dedupsim: internal error: {}\n", e.what());
    return kExitDatabase;
  }
}
