// The options of `dedupsim run` that set what a lesson runs with (RunOptions,
// lesson/scenario.h): one row each, in the order --help lists them. A row says the flag,
// what it sets, which scenarios take it (ScenarioTraits; every scenario when 0) and why
// the others have no use for it, what values it takes, and how a value is stored in and
// read from RunOptions.
//
// Each default is written once, as RunOptions' member initialiser: the help text's
// "(default ...)" and the command-line reference's default column are read from a default
// RunOptions through `show`. A new option is a RunOptions member and a row here; the
// command line (cli/run_command.cpp) adds every row, refuses a row's option given to a
// scenario without its trait (OptionMisfit), and docs/cli.md lists each row's scenarios.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lesson/scenario.h"

namespace dedupsim {

enum class OptionKind {
  kDecimal,   // an integer in [min, max]; set gets it as it is
  kChoice,    // one of choices; set gets its index
  kDuration,  // 10m, 36h, 7d (core/duration.h) within what duration_problem allows; set gets ms
};

struct LessonOption {
  std::string_view flag = {};  // "--hold-ms"
  // What it sets, as --help says it after the scenarios that take it (when names_scenarios):
  // "{}" stands for the default, as show gives it for a default RunOptions.
  std::string_view help = {};
  bool names_scenarios = true;  // --help opens with the scenarios that take it: "concurrent, ...: "
  unsigned trait = 0;           // ScenarioTraits: only scenarios with it take it; 0: every one
  std::string_view refusal = {};      // why a scenario without the trait has no use for it
  std::string_view misfit_flag = {};  // how a refusal names it, when not flag ("--hold-ms/--stagger-ms")
  OptionKind kind = OptionKind::kDecimal;
  int64_t min = 0;  // kDecimal
  int64_t max = 0;
  std::span<const std::string_view> choices = {};  // kChoice
  // kDuration: "" when the duration fits, else why not ("the lease is at most 1d").
  std::string (*duration_problem)(std::chrono::milliseconds value) = nullptr;
  // Stores a value read from the command line: the integer, the choice's index, or the
  // duration in milliseconds.
  void (*set)(RunOptions& options, int64_t value) = nullptr;
  // The value in options, written as the flag takes it ("500", "10m", "throw").
  std::string (*show)(const RunOptions& options) = nullptr;
};

std::span<const LessonOption> LessonOptions();
// The row of flag, or null for an option that sets nothing of RunOptions.
const LessonOption* FindLessonOption(std::string_view flag);
// The help text of a row: its scenarios (when it names them), what it sets, its default.
// taken_by: the names of the scenarios that have the row's trait, "a, b, c".
std::string LessonOptionHelp(const LessonOption& option, std::string_view taken_by);

// A one-line reason when an option given (its flag, among given) is one this scenario has
// no use for: "--store-size does not apply to scenario 'naive': it keeps no bounded dedup
// store". The first such option in the table's order.
std::optional<std::string> OptionMisfit(const Scenario& scenario,
                                        const std::vector<std::string>& given);

}  // namespace dedupsim
