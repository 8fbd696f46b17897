// The table of scenarios: every lesson dedupsim can run, in the order `list` shows them,
// each with the theme docs/README.md lists it under. The lessons are listed once, in
// lessons.inc; the first six are the post's, in the post's order, and `run all` runs
// exactly those.
#pragma once

#include <span>
#include <string_view>

#include "lesson/scenario.h"

namespace dedupsim {

#define LESSON(object, theme) extern const Scenario object;
#include "lessons.inc"
#undef LESSON

// What a lesson teaches, as docs/README.md groups the lessons; in the page's order.
enum class Theme { kPostsSix, kConcurrency, kSideEffects, kKeys, kRetention, kBroker, kOperations };
inline constexpr Theme kThemes[] = {Theme::kPostsSix,  Theme::kConcurrency, Theme::kSideEffects,
                                    Theme::kKeys,      Theme::kRetention,   Theme::kBroker,
                                    Theme::kOperations};

// "The post's six", "Concurrency and locking", ...: the theme's title on the page.
std::string_view ThemeTitle(Theme theme);

std::span<const Scenario* const> AllScenarios();
// nullptr when no scenario has that name.
const Scenario* FindScenario(std::string_view name);
// The theme a scenario of the table is listed under.
Theme ThemeOf(const Scenario& scenario);

}  // namespace dedupsim
