// The table of scenarios: every lesson dedupsim can run, in the order `list` shows them,
// each with the theme docs/README.md lists it under.
//
// Rules:
// - Each lesson registers itself in its own file, scenarios/<name>.cpp, right after its
//   Scenario, with a LessonRegistration at namespace scope:
//     const LessonRegistration kNaiveLesson{kNaiveScenario,
//                                           {.rank = 10, .theme = Theme::kPostsSix}};
//   A new lesson is that file and its page, docs/scenarios/<name>.md, and what `dedupsim
//   docs` regenerates (docs/README.md's index; docs/cli.md's row of an option the lesson
//   takes): no list to edit here, in table.cpp, in CMake or in the tests.
// - The table is in rank order, whatever order the files are linked or their registrations
//   run in. The first six are the post's, in the post's order (ranks 10 to 60); `run all`
//   runs exactly those (Scenario::in_post). Ranks go in tens, so a lesson fits in between.
// - Two lessons with one rank, or one name, are an error at startup: the first call of
//   AllScenarios (dedupsim's main makes it before any command) throws std::logic_error
//   naming both.
// - Every registration is linked: CMake links the lessons' archive whole
//   (scenarios/CMakeLists.txt), since nothing names a lesson's objects.
// - Registrations run before main; the table's functions are for main and after.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "lesson/scenario.h"

namespace dedupsim {

// What a lesson teaches, as docs/README.md groups the lessons; in the page's order.
enum class Theme { kPostsSix, kConcurrency, kSideEffects, kKeys, kRetention, kBroker, kOperations };
inline constexpr Theme kThemes[] = {Theme::kPostsSix,  Theme::kConcurrency, Theme::kSideEffects,
                                    Theme::kKeys,      Theme::kRetention,   Theme::kBroker,
                                    Theme::kOperations};

// "The post's six", "Concurrency and locking", ...: the theme's title on the page.
std::string_view ThemeTitle(Theme theme);

// A lesson's place: its rank in the table (lower first) and its theme.
struct LessonPlace {
  int rank = 0;
  Theme theme = Theme::kPostsSix;
};

// One lesson of the table.
struct Lesson {
  const Scenario* scenario = nullptr;
  LessonPlace place;
};

// Adds scenario to the table at place (see the rules above). scenario must outlive the
// program: a namespace-scope object of the lesson's file.
class LessonRegistration {
 public:
  LessonRegistration(const Scenario& scenario, LessonPlace place);
};

// The lessons in rank order; throws std::logic_error naming both lessons when two share a
// rank or a name. The table's own check, open to the tests.
std::vector<Lesson> RankLessons(std::vector<Lesson> lessons);

std::span<const Scenario* const> AllScenarios();
// nullptr when no scenario has that name.
const Scenario* FindScenario(std::string_view name);
// The theme a scenario of the table is listed under.
Theme ThemeOf(const Scenario& scenario);

}  // namespace dedupsim
