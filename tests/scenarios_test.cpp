// The post's scenarios through the runner: figures, exact lines, and that options change
// the figures (nothing is written in).
#include <catch2/catch.hpp>

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "lesson/options.h"
#include "lesson/runner.h"
#include "scenarios.h"
#include "support.h"

namespace scenarios_test {

using namespace dedupsim;
using dedupsim::testing::Fixture;

namespace {

ScenarioResult Run(const char* name, RunOptions options = {}, DatabaseSettings settings = {}) {
  Fixture fx(options, settings);
  const Scenario* s = FindScenario(name);
  REQUIRE(s != nullptr);
  return RunScenario(*s, fx.env, true);
}

}  // namespace

TEST_CASE("the table lists the post's six first, in the post's order", "[scenarios]") {
  auto all = AllScenarios();
  std::vector<std::string_view> post;
  for (const Scenario* s : all) {
    if (s->in_post) post.push_back(s->name);
  }
  CHECK(post == std::vector<std::string_view>{"naive", "check-then-process", "inbox",
                                              "crash-before-commit", "concurrent", "email"});
  for (size_t i = 0; i < post.size(); ++i) CHECK(all[i]->in_post);
  std::set<std::string_view> names;
  for (const Scenario* s : all) {
    CHECK(names.insert(s->name).second);
    CHECK_FALSE(s->summary.empty());
    CHECK(s->run != nullptr);
    CHECK(s->expected != nullptr);
  }
}

// Mutations caught: RankLessons's duplicate-rank check dropped (the rank-30 pair passes),
// its sort dropped (the order stays the registrations').
TEST_CASE(
    "the table is in rank order whatever the registrations' order, and a shared rank or name is an "
    "error naming both",
    "[scenarios]") {
  const Scenario& naive = *FindScenario("naive");
  const Scenario& inbox = *FindScenario("inbox");
  const Scenario& email = *FindScenario("email");
  std::vector<Lesson> ranked = RankLessons({{&email, {60, Theme::kPostsSix}},
                                            {&naive, {10, Theme::kPostsSix}},
                                            {&inbox, {30, Theme::kPostsSix}}});
  REQUIRE(ranked.size() == 3);
  CHECK(ranked[0].scenario == &naive);
  CHECK(ranked[1].scenario == &inbox);
  CHECK(ranked[2].scenario == &email);
  try {
    RankLessons({{&naive, {10, Theme::kPostsSix}},
                 {&inbox, {30, Theme::kPostsSix}},
                 {&email, {30, Theme::kPostsSix}}});
    FAIL("two lessons ranked 30 were taken");
  } catch (const std::logic_error& e) {
    CHECK(std::string(e.what()) == "two lessons ranked 30: inbox and email");
  }
  try {
    RankLessons({{&inbox, {30, Theme::kPostsSix}},
                 {&naive, {10, Theme::kPostsSix}},
                 {&inbox, {35, Theme::kKeys}}});
    FAIL("two lessons named inbox were taken");
  } catch (const std::logic_error& e) {
    CHECK(std::string(e.what()) == "two lessons named inbox, ranked 30 and 35");
  }
}

TEST_CASE("naive: delivered twice reserves twice, more deliveries reserve more", "[scenarios]") {
  auto r = Run("naive");
  CHECK(r.outcome.line == "[naive]              delivered twice -> Dune reserved: 4");
  CHECK(r.outcome.figures["reserved"] == 4);
  CHECK(r.differences.empty());
  RunOptions o;
  o.deliveries = 3;
  o.quantity = 5;
  auto more = Run("naive", o);
  CHECK(more.outcome.line == "[naive]              delivered 3 times -> Dune reserved: 15");
  CHECK(more.differences.empty());
}

TEST_CASE("check-then-process: the crash after the stock commit reserves twice", "[scenarios]") {
  auto r = Run("check-then-process");
  CHECK(r.outcome.line ==
        "[check-then-process] crash after stock commit, redelivered -> Dune reserved: 4");
  CHECK(r.outcome.figures["reservedAfterCrash"] == 2);
  CHECK(r.outcome.figures["crashed"] == true);
  CHECK(r.differences.empty());
  RunOptions o;
  o.quantity = 3;
  CHECK(Run("check-then-process", o).outcome.figures["reserved"] == 6);
}

TEST_CASE("inbox: the second delivery is skipped", "[scenarios]") {
  auto r = Run("inbox");
  CHECK(r.outcome.line ==
        "[inbox]              delivered twice -> processed: True, False; Dune reserved: 2");
  CHECK(r.outcome.figures["processed"] == nlohmann::json({true, false}));
  RunOptions o;
  o.deliveries = 4;
  o.quantity = 7;
  auto more = Run("inbox", o);
  CHECK(more.outcome.line ==
        "[inbox]              delivered 4 times -> processed: True, False, False, False; Dune "
        "reserved: 7");
  CHECK(more.differences.empty());
}

TEST_CASE("crash-before-commit: nothing survives the crash", "[scenarios]") {
  auto r = Run("crash-before-commit");
  CHECK(r.outcome.line ==
        "[inbox]              crash before commit -> reserved 0; redelivered -> Dune reserved: 2");
  CHECK(r.outcome.figures["inboxRowsAfterCrash"] == 0);
  CHECK(r.differences.empty());
}

TEST_CASE("concurrent: one copy processed, the second waited on the lock", "[scenarios]") {
  auto r = Run("concurrent");
  CHECK(r.outcome.line ==
        "[inbox]              two copies at once -> processed: True, False; Dune reserved: 2; "
        "second waited for the first: True");
  CHECK(r.outcome.figures["waitMs"].get<int64_t>() > 0);  // how long depends on when B ran
  CHECK(r.outcome.figures["busyRetries"].get<int64_t>() > 0);
  CHECK(r.differences.empty());
}

TEST_CASE("concurrent: with no hold, the second copy does not wait", "[scenarios]") {
  RunOptions o;
  o.hold = std::chrono::milliseconds(0);
  auto r = Run("concurrent", o);
  CHECK(r.outcome.line ==
        "[inbox]              two copies at once -> processed: True, False; Dune reserved: 2; "
        "second waited for the first: False");
  // Waiting is read from the lock intervals (B blocked while A held the write lock), not
  // from waitMs: that counts every busy-handler call, and a WAL-index read can cost B one
  // millisecond with A long gone (seen once in CI: waitMs 1, secondWaited false).
  CHECK(r.outcome.figures["secondWaited"] == false);
  CHECK(r.differences.empty());
}

TEST_CASE("concurrent-different: the second message still waits, same book or not", "[scenarios]") {
  RunOptions o;
  o.hold = std::chrono::milliseconds(200);
  o.stagger = std::chrono::milliseconds(50);
  auto r = Run("concurrent-different", o);
  CHECK(r.outcome.line ==
        "[concurrent-different] two different messages at once -> same book: processed: True, "
        "True; Dune reserved: 4; second waited for the first: True; different books: processed: "
        "True, True; Dune reserved: 2, Emma reserved: 2; second waited for the first: True");
  CHECK(r.differences.empty());
}

TEST_CASE("email: one email, NeedsReconciliation on redelivery", "[scenarios]") {
  auto r = Run("email");
  CHECK(r.outcome.line ==
        "[email]              crash after send, redelivered -> emails sent: 1, second delivery: "
        "NeedsReconciliation");
  CHECK(r.outcome.figures["emailsSent"] == 1);
  CHECK(r.differences.empty());
}

TEST_CASE("check: finds a figure that differs from the expectation", "[scenarios]") {
  nlohmann::ordered_json expected = {{"reserved", 2}, {"processed", {true, false}}};
  nlohmann::ordered_json figures = {{"reserved", 4}, {"processed", {true, false}}};
  auto diffs = Differences("naive", expected, figures);
  REQUIRE(diffs.size() == 1);
  CHECK(diffs[0] == "naive: reserved is 4, expected 2");
  CHECK(Differences("x", {{"gone", 1}}, figures) ==
        std::vector<std::string>{"x: gone is missing, expected 1"});
}

TEST_CASE("the JSON view carries the line, every figure, the check and the events",
          "[scenarios]") {
  auto r = Run("inbox");
  auto j = ResultToJson(r, true);
  CHECK(j["scenario"] == "inbox");
  CHECK(j["tag"] == "inbox");
  CHECK(j["line"] == r.outcome.line);
  CHECK(j["reserved"] == 2);
  CHECK(j["check"]["passed"] == true);
  REQUIRE(j["events"].is_array());
  // Two deliveries: two BEGINs, one COMMIT, one duplicate key, one ROLLBACK.
  int begins = 0, commits = 0, rollbacks = 0, duplicates = 0;
  for (const auto& e : j["events"]) {
    if (e["detail"] == "BEGIN") ++begins;
    if (e["detail"] == "COMMIT") ++commits;
    if (e["detail"] == "ROLLBACK") ++rollbacks;
    if (e["result"] == "constraint 1555") ++duplicates;
  }
  CHECK(begins == 2);
  CHECK(commits == 1);
  CHECK(rollbacks == 1);
  CHECK(duplicates == 1);
}

TEST_CASE("options that do not fit a scenario are named", "[scenarios]") {
  CHECK(OptionMisfit(*FindScenario("naive"), {"--crash-mode"}).has_value());
  CHECK_FALSE(OptionMisfit(*FindScenario("email"), {"--crash-mode"}).has_value());
  CHECK(OptionMisfit(*FindScenario("inbox"), {"--instances"}).has_value());
  CHECK_FALSE(OptionMisfit(*FindScenario("concurrent"), {"--instances"}).has_value());
  // Every scenario takes --quantity; the two timing options are refused as one.
  CHECK_FALSE(OptionMisfit(*FindScenario("naive"), {"--quantity"}).has_value());
  CHECK(OptionMisfit(*FindScenario("naive"), {"--stagger-ms"}) ==
        "--hold-ms/--stagger-ms does not apply to scenario 'naive': it runs no instances at the "
        "same time");
}

// Mutation caught: a row whose set stores into another member (--stagger-ms setting hold),
// or whose show reads another one.
TEST_CASE("each lesson option stores what it reads and shows what it stored", "[scenarios]") {
  for (const LessonOption& row : LessonOptions()) {
    INFO(row.flag);
    REQUIRE(row.set != nullptr);
    REQUIRE(row.show != nullptr);
    const std::string before = row.show(RunOptions{});
    RunOptions options;
    switch (row.kind) {
      case OptionKind::kDecimal:
        for (int64_t value : {row.min, row.max}) {
          row.set(options, value);
          CHECK(row.show(options) == std::to_string(value));
        }
        break;
      case OptionKind::kChoice:
        for (size_t i = 0; i < row.choices.size(); ++i) {
          row.set(options, static_cast<int64_t>(i));
          CHECK(row.show(options) == row.choices[i]);
        }
        break;
      case OptionKind::kDuration:
        row.set(options, 7 * 60 * 1000);
        CHECK(row.show(options) == "7m");
        break;
    }
    // Setting this row left every other row's value at its default.
    for (const LessonOption& other : LessonOptions()) {
      if (&other == &row || other.show == row.show) continue;
      INFO(other.flag);
      CHECK(other.show(options) == other.show(RunOptions{}));
    }
    CHECK(row.show(RunOptions{}) == before);
  }
}

}  // namespace scenarios_test
