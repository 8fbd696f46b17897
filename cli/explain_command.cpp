// dedupsim explain: prints a scenario's lesson, hook points and what to try next, wrapped
// to the terminal's width (80 columns when stdout is not a terminal).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "commands.h"
#include "exit_status.h"
#include "file_scenario.h"
#include "files/scenario_file.h"
#include "options.h"
#include "scenarios.h"
#include "views/explain.h"

namespace dedupsim::cli {

namespace {

constexpr size_t kDefaultWidth = 80;

size_t TerminalWidth() {
  struct winsize size {};
  if (::isatty(STDOUT_FILENO) == 1 && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 &&
      size.ws_col >= 20) {
    return size.ws_col;
  }
  return kDefaultWidth;
}

std::string ScenarioNames() {
  std::string names;
  for (const Scenario* s : AllScenarios()) {
    if (!names.empty()) names += ", ";
    names += s->name;
  }
  return names;
}

}  // namespace

Command AddExplainCommand(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "explain", "Explain a scenario: its lesson, hook points and what to try next");
  auto name = std::make_shared<std::string>();
  auto width = std::make_shared<size_t>(0);
  auto file = std::make_shared<std::string>();
  auto* scenario_name = sub->add_option("scenario", *name, "Scenario name (see dedupsim list)")
                            ->type_name("SCENARIO");
  sub->add_option("--file", *file,
                  "Explain a lesson written in a scenario file (its lesson, hook-points and "
                  "try-next text)")
      ->type_name("FILE")
      ->check(CLI::ExistingFile)
      ->excludes(scenario_name);
  AddDecimal(sub, "--width", *width,
             "Wrap to this many columns (default: the terminal's width, or 80)", size_t{20},
             size_t{1000});
  return {sub, [name, width, file]() -> int {
            const size_t columns = *width > 0 ? *width : TerminalWidth();
            if (!file->empty()) {
              try {
                files::ScenarioFile lesson = files::LoadScenarioFile(*file);
                if (lesson.lesson.empty()) {
                  fmt::print(stderr, "dedupsim: {}: the file has no lesson = \"...\" to explain\n", *file);
                  return kExitUsage;
                }
                const FileRunOverrides overrides;
                fmt::print("{}", ExplainScenario(AsScenario(lesson, overrides), columns));
                return kExitOk;
              } catch (const files::FileError& e) {
                fmt::print(stderr, "dedupsim: {}\n", e.what());
                return kExitUsage;
              }
            }
            if (name->empty()) {
              fmt::print(stderr, "dedupsim: explain needs a scenario name or --file\n");
              return kExitUsage;
            }
            const Scenario* scenario = FindScenario(*name);
            if (scenario == nullptr) {
              fmt::print(stderr, "dedupsim: unknown scenario '{}' (valid: {})\n", *name,
                         ScenarioNames());
              return kExitUsage;
            }
            fmt::print("{}", ExplainScenario(*scenario, columns));
            return kExitOk;
          }};
}

}  // namespace dedupsim::cli
