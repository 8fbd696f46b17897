// The subcommands of the dedupsim executable. Each adds itself to the app and returns the
// function that runs it once parsing succeeded; that function returns an ExitStatus.
//
// CLI11 is not included here: only the files that define a command's options include
// <CLI/CLI.hpp>. main.cpp defines only the command named first (see kCommands there).
#pragma once

#include <functional>

namespace CLI {
class App;
}  // namespace CLI

namespace dedupsim::cli {

struct Command {
  CLI::App* sub;             // the parsed subcommand
  std::function<int()> run;  // returns an ExitStatus
};

Command AddListCommand(CLI::App& app);
Command AddRunCommand(CLI::App& app);
Command AddCleanupCommand(CLI::App& app);
Command AddExploreCommand(CLI::App& app);
Command AddCheckCommand(CLI::App& app);
Command AddExplainCommand(CLI::App& app);
Command AddDocsCommand(CLI::App& app);
Command AddBenchCommand(CLI::App& app);
Command AddSoakCommand(CLI::App& app);
// Hidden, for the build and the shell: the man page, and completion of a command line.
Command AddManCommand(CLI::App& app);
Command AddCompleteCommand(CLI::App& app);

// Records every option's default (its variable's value) before parsing, so that --help
// and the generated reference (dedupsim docs --cli) show it.
void CaptureDefaults(CLI::App& app);

}  // namespace dedupsim::cli
