// The options of `dedupsim run` that set what a lesson runs with (RunOptions,
// lesson/scenario.h): one row each, in the order --help lists them. A row says the flag,
// what it sets, which scenarios take it (ScenarioTraits; every scenario when 0), said as a
// kind of lesson ("lessons with a crash point"), never as a list of names, and why the
// others have no use for it, what values it takes, and how a value is stored in and read
// from RunOptions.
//
// Each default is written once, as RunOptions' member initialiser: the help text's
// "(default ...)" and the command-line reference's default column are read from a default
// RunOptions through `show`. A new option is a RunOptions member and a row here; the
// command line (cli/run_command.cpp) adds every row, refuses a row's option given to a
// scenario without its trait (OptionMisfit), and docs/cli.md says each row's kind of lesson.
//
// No text made from this table names a lesson: a new lesson that takes an option leaves
// --help, docs/cli.md and the man page as they were. Which options a lesson takes is said
// where the lesson is: its page's Options section (docs/scenarios/LESSON.md; the test suite
// holds each page to its lesson's traits).
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
  // What it sets, as --help says it after `lessons` ("lessons that run ...: the first copy
  // ..."): "{}" stands for the default, as show gives it for a default RunOptions.
  std::string_view help = {};
  unsigned trait = 0;  // ScenarioTraits: only scenarios with it take it; 0: every one
  // The scenarios with the trait, as a kind ("lessons with a crash point"); "" when trait is 0.
  std::string_view lessons = {};
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
// What a row sets, with its default ("the first copy holds this long before going on
// (default 500)").
std::string LessonOptionMeaning(const LessonOption& option);
// The help text of a row: the lessons that take it (when only some do), then its meaning.
std::string LessonOptionHelp(const LessonOption& option);
// The rows only some lessons take (a trait) that scenario takes, in the table's order.
std::vector<const LessonOption*> LessonOptionsOf(const Scenario& scenario);

// A one-line reason when an option given (its flag, among given) is one this scenario has
// no use for: "--store-size does not apply to scenario 'naive': it keeps no bounded dedup
// store". The first such option in the table's order.
std::optional<std::string> OptionMisfit(const Scenario& scenario,
                                        const std::vector<std::string>& given);

}  // namespace dedupsim
