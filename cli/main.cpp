// dedupsim: a teaching simulator for idempotent message consumers. This file only parses
// the command line, dispatches to the chosen command, and maps failures to exit statuses.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.h"
#include "exit_status.h"
#include "core/input_error.h"
#include "interrupt.h"
#include "os/process_error.h"
#include "scenarios.h"
#include "store/error.h"
#include "views/explain.h"

namespace {

// --help's footer: every exit status, from the one table of them (exit_status.h).
std::string ExitCodesFooter() {
  std::string text = "Exit status:";
  for (const dedupsim::ExitStatusMeaning& status : dedupsim::kExitStatusMeanings) {
    text += fmt::format(" {} {};", status.code, status.brief);
  }
  text.back() = '.';
  text = dedupsim::WrapText(text, 88);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// Every command, in the order --help lists them; each name is the one its Add function
// gives its subcommand (checked when it is defined). A command that describes the others
// (docs, and the hidden __man and __complete) needs every command defined. Hidden commands
// are for the build and the shell: no group, so --help, the docs and completion leave them
// out.
struct CommandEntry {
  const char* name;
  dedupsim::cli::Command (*add)(CLI::App&);
  bool describes_all = false;
  bool hidden = false;
};
constexpr CommandEntry kCommands[] = {
    {"list", dedupsim::cli::AddListCommand},
    {"run", dedupsim::cli::AddRunCommand},
    {"explain", dedupsim::cli::AddExplainCommand},
    {"docs", dedupsim::cli::AddDocsCommand, true},
    {"cleanup", dedupsim::cli::AddCleanupCommand},
    {"explore", dedupsim::cli::AddExploreCommand},
    {"check", dedupsim::cli::AddCheckCommand},
    {"bench", dedupsim::cli::AddBenchCommand},
    {"soak", dedupsim::cli::AddSoakCommand},
    {"__man", dedupsim::cli::AddManCommand, true, true},
    {"__complete", dedupsim::cli::AddCompleteCommand, true, true},
};

}  // namespace

int main(int argc, char** argv) {
  using namespace dedupsim;
  cli::InstallInterruptHandling();  // before any thread or child exists
  // The table of lessons, ranked once: two lessons with one rank or name stop every command.
  try {
    AllScenarios();
  } catch (const std::logic_error& e) {
    fmt::print(stderr, "dedupsim: internal error: {}\n", e.what());
    return kExitDatabase;
  }
  CLI::App app{"dedupsim: a teaching simulator for idempotent message consumers",
               "dedupsim"};
  app.set_version_flag("--version", std::string("dedupsim ") + DEDUPSIM_VERSION);
  app.require_subcommand(1, 1);
  const std::string footer = ExitCodesFooter();
  app.footer(footer);

  std::string color = "auto";  // read by the commands that color their output
  app.add_option("--color", color,
                 "Color run's lines: auto (on a terminal, unless NO_COLOR is set), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));

  // A command named first is the only one defined: the options of every other command
  // are not built (about half a millisecond of each run's start). --help, --version,
  // a command that describes them all, and a word that is not a command define them all.
  std::vector<cli::Command> commands;
  const std::string first = argc > 1 ? argv[1] : "";
  const CommandEntry* named = nullptr;
  for (const CommandEntry& entry : kCommands) {
    if (first == entry.name) named = &entry;
  }
  const bool known = named != nullptr;
  const bool one = known && !named->describes_all;
  for (const CommandEntry& entry : kCommands) {
    if (one && first != entry.name) continue;
    commands.push_back(entry.add(app));
    if (entry.hidden) commands.back().sub->group("");
    if (commands.back().sub->get_name() != entry.name) {
      fmt::print(stderr, "dedupsim: internal error: command {} is defined as {}\n", entry.name,
                 commands.back().sub->get_name());
      return kExitDatabase;
    }
  }
  for (const cli::Command& command : commands) command.sub->footer(footer);
  cli::CaptureDefaults(app);

  // CLI11 would only say that a subcommand is required; name the word it did not know.
  if (argc > 1 && argv[1][0] != '-' && !known) {
    std::string names;
    for (const CommandEntry& entry : kCommands) {
      if (!entry.hidden) names += (names.empty() ? "" : ", ") + std::string(entry.name);
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
  } catch (const InputError& e) {
    // A file's fault found while it ran (its statement past its budget): FILE:LINE:COLUMN.
    fmt::print(stderr, "dedupsim: {}\n", e.what());
    return kExitUsage;
  } catch (const DatabaseError& e) {
    fmt::print(stderr, "dedupsim: {}\n", e.what());
    return kExitDatabase;
  } catch (const std::exception& e) {
    fmt::print(stderr, "dedupsim: internal error: {}\n", e.what());
    return kExitDatabase;
  }
}
