#include "scenarios.h"

#include <stdexcept>

namespace dedupsim {

namespace {

const Scenario* const kScenarios[] = {
#define LESSON(object, theme) &object,
#include "lessons.inc"
#undef LESSON
};

const Theme kThemeOf[] = {
#define LESSON(object, theme) Theme::theme,
#include "lessons.inc"
#undef LESSON
};

static_assert(std::size(kScenarios) == std::size(kThemeOf));

}  // namespace

std::string_view ThemeTitle(Theme theme) {
  switch (theme) {
    case Theme::kPostsSix:
      return "The post's six";
    case Theme::kConcurrency:
      return "Concurrency and locking";
    case Theme::kSideEffects:
      return "Side effects";
    case Theme::kKeys:
      return "Keys";
    case Theme::kRetention:
      return "Retention and windows";
    case Theme::kBroker:
      return "Broker behaviour";
    case Theme::kOperations:
      return "Operations";
  }
  return "?";
}

std::span<const Scenario* const> AllScenarios() { return kScenarios; }

const Scenario* FindScenario(std::string_view name) {
  for (const Scenario* s : kScenarios) {
    if (s->name == name) return s;
  }
  return nullptr;
}

Theme ThemeOf(const Scenario& scenario) {
  for (size_t i = 0; i < std::size(kScenarios); ++i) {
    if (kScenarios[i] == &scenario) return kThemeOf[i];
  }
  throw std::logic_error("not a scenario of the table: " + std::string(scenario.name));
}

}  // namespace dedupsim
