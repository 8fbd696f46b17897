#include "scenarios.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dedupsim {

namespace {

// Every registration, in the order they ran (the link's, which means nothing).
std::vector<Lesson>& Registered() {
  static std::vector<Lesson> lessons;
  return lessons;
}

struct Table {
  std::vector<Lesson> lessons;
  std::vector<const Scenario*> scenarios;
};

const Table& TheTable() {
  static const Table table = [] {
    Table t;
    t.lessons = RankLessons(Registered());
    for (const Lesson& lesson : t.lessons) t.scenarios.push_back(lesson.scenario);
    return t;
  }();
  return table;
}

}  // namespace

LessonRegistration::LessonRegistration(const Scenario& scenario, LessonPlace place) {
  Registered().push_back(Lesson{&scenario, place});
}

std::vector<Lesson> RankLessons(std::vector<Lesson> lessons) {
  std::stable_sort(lessons.begin(), lessons.end(),
                   [](const Lesson& a, const Lesson& b) { return a.place.rank < b.place.rank; });
  for (size_t i = 1; i < lessons.size(); ++i) {
    const Lesson& a = lessons[i - 1];
    const Lesson& b = lessons[i];
    if (a.place.rank == b.place.rank) {
      throw std::logic_error("two lessons ranked " + std::to_string(a.place.rank) + ": " +
                             std::string(a.scenario->name) + " and " +
                             std::string(b.scenario->name));
    }
  }
  for (size_t i = 0; i < lessons.size(); ++i) {
    for (size_t j = i + 1; j < lessons.size(); ++j) {
      if (lessons[i].scenario->name == lessons[j].scenario->name) {
        throw std::logic_error("two lessons named " + std::string(lessons[i].scenario->name) +
                               ", ranked " + std::to_string(lessons[i].place.rank) + " and " +
                               std::to_string(lessons[j].place.rank));
      }
    }
  }
  return lessons;
}

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

std::span<const Scenario* const> AllScenarios() { return TheTable().scenarios; }

const Scenario* FindScenario(std::string_view name) {
  for (const Scenario* s : AllScenarios()) {
    if (s->name == name) return s;
  }
  return nullptr;
}

Theme ThemeOf(const Scenario& scenario) {
  for (const Lesson& lesson : TheTable().lessons) {
    if (lesson.scenario == &scenario) return lesson.place.theme;
  }
  throw std::logic_error("not a scenario of the table: " + std::string(scenario.name));
}

}  // namespace dedupsim
