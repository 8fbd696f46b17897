// dedupsim explore end to end: the printed matrix is the one in docs/explore.md, two runs
// with the same seed print the same JSON but for the timing fields, exit statuses, the
// counterexample view, and seeded runs that replay.
#include <catch2/catch.hpp>
#include <regex>

#include <nlohmann/json.hpp>

#include "explore/random_mode.h"
#include "explore/scheduler.h"
#include "explore/strategies.h"
#include "support.h"

namespace explore_cli_test {

using namespace dedupsim;
using dedupsim::testing::CliResult;
using dedupsim::testing::DocBlock;
using dedupsim::testing::ReadFile;
using dedupsim::testing::RunCli;
using dedupsim::testing::SplitLines;

namespace {

nlohmann::json WithoutTiming(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text);
  for (const char* key : {"elapsedMs", "schedulesPerSecond", "runsPerSecond"}) j.erase(key);
  return j;
}

}  // namespace

TEST_CASE("docs/explore.md shows the matrix exactly as explore prints it", "[explore][cli]") {
  CliResult r = RunCli({"explore"});
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> lines = SplitLines(r.out);
  REQUIRE(lines.size() > 3);
  // Everything but the last line, which says how fast this run went.
  CHECK(lines.back().rfind("explored in ", 0) == 0);
  std::string printed;
  for (size_t i = 0; i + 1 < lines.size(); ++i) printed += lines[i] + "\n";
  std::string doc = ReadFile(std::string(DEDUPSIM_SOURCE_DIR) + "/docs/explore.md");
  CHECK(DocBlock(doc, "<!-- explore-matrix -->") == printed);
}

TEST_CASE("two runs with the same seed differ only in the timing fields", "[explore][cli]") {
  CliResult first = RunCli({"explore", "--format", "json", "--seed", "5"});
  CliResult second = RunCli({"explore", "--format", "json", "--seed", "5"});
  REQUIRE(first.exit_code == 0);
  REQUIRE(second.exit_code == 0);
  nlohmann::json a = nlohmann::json::parse(first.out);
  CHECK(a.contains("elapsedMs"));
  CHECK(a["totalSchedules"].get<int64_t>() > 0);
  // schedulesPerSecond is the schedules over the elapsed time, both as printed (elapsedMs
  // rounded to the millisecond, the rate to a unit). Catches
  // `j["schedulesPerSecond"] = 0` (or any rate not from these two).
  const auto total = static_cast<double>(a["totalSchedules"].get<int64_t>());
  const auto elapsed_ms = static_cast<double>(a["elapsedMs"].get<int64_t>());
  REQUIRE(elapsed_ms >= 1);
  const auto rate = static_cast<double>(a["schedulesPerSecond"].get<int64_t>());
  CHECK(rate >= total * 1000.0 / (elapsed_ms + 0.5) - 1);
  CHECK(rate <= total * 1000.0 / (elapsed_ms - 0.5) + 1);
  CHECK(WithoutTiming(first.out) == WithoutTiming(second.out));
  CHECK(first.out.find("pid") == std::string::npos);
}

TEST_CASE("unknown strategies and faults exit 2 with the valid names", "[explore][cli]") {
  CliResult s = RunCli({"explore", "--strategy", "optimistic"});
  CHECK(s.exit_code == 2);
  CHECK(s.err.find("unknown strategy 'optimistic'") != std::string::npos);
  CHECK(s.err.find(explore::StrategyNames()) != std::string::npos);
  CliResult f = RunCli({"explore", "--fault", "meteor"});
  CHECK(f.exit_code == 2);
  CHECK(f.err.find("unknown fault 'meteor'") != std::string::npos);
  CHECK(f.err.find("lost-ack") != std::string::npos);
  CliResult e = RunCli({"explore", "--expect-safe", "hope"});
  CHECK(e.exit_code == 2);
  CliResult c = RunCli({"explore", "--counterexample"});
  CHECK(c.exit_code == 2);
}

TEST_CASE("explore --expect-safe exits 1 for a strategy that fails somewhere", "[explore][cli]") {
  CliResult naive = RunCli({"explore", "--expect-safe", "naive", "--fault", "duplicate"});
  CHECK(naive.exit_code == 1);
  CHECK(naive.err.find("expected naive to be safe, but under duplicate: twice") != std::string::npos);
  // The inbox holds everywhere but against a producer that resends under a new id.
  CliResult all = RunCli({"explore", "--expect-safe", "inbox"});
  CHECK(all.exit_code == 1);
  CHECK(all.err.find("under producer-duplicate") != std::string::npos);
  CliResult consumer_side =
      RunCli({"explore", "--expect-safe", "inbox", "--expect-safe", "claim-last", "--fault",
              "duplicate", "--fault", "crash", "--fault", "concurrent", "--fault",
              "second-subscriber", "--fault", "lost-ack"});
  CHECK(consumer_side.exit_code == 0);
  CHECK(consumer_side.err.empty());
  // A reconcile is the flag the invariant asks for, not a failure of it.
  CliResult email = RunCli({"explore", "--expect-safe", "email", "--fault", "crash"});
  CHECK(email.exit_code == 0);
}

TEST_CASE("explore --counterexample prints the trace of the shortest failing schedule", "[explore][cli]") {
  CliResult r = RunCli({"explore", "--strategy", "check-then-process", "--fault", "crash",
                        "--counterexample"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("crash at AfterStockCommitted") != std::string::npos);
  CHECK(r.out.find(" ms  A pid ") != std::string::npos);  // FormatTraceLine
  CHECK(std::regex_search(r.out, std::regex("crash at AfterStockCommitted +→ SimulatedCrash thrown")));
  // After the crash the message goes back to the queue: the broker's step, with the broker's
  // number for the delivery that got no ack, not a "redeliver" said by the consumer that died.
  // Mutations caught: the worker's NoteUnacked recorded as the consumer's note again; the
  // broker's delivery number zeroed in ExplorerTraceLine.
  CHECK(std::regex_search(
      r.out, std::regex(" ms  broker pid [0-9]+ +no ack for [0-9a-f-]+ \\(delivery 1\\) +→ back in the queue")));
  CHECK_FALSE(std::regex_search(r.out, std::regex(" ms  A pid [0-9]+ +redeliver")));
  CHECK(r.out.find("final: reserved 4 (once per order: 2), inbox rows 1, emails sent 0") !=
        std::string::npos);

  // Without --fault: the shortest over every fault. For naive, a duplicate in two steps.
  CliResult any = RunCli({"explore", "--strategy", "naive", "--counterexample"});
  REQUIRE(any.exit_code == 0);
  CHECK(any.out.find("naive under duplicate") != std::string::npos);
  CHECK(any.out.find("2 steps") != std::string::npos);

  CliResult none = RunCli({"explore", "--strategy", "inbox", "--fault", "concurrent", "--counterexample"});
  CHECK(none.exit_code == 0);
  CHECK(none.out.find("no failing schedule") != std::string::npos);

  CliResult json = RunCli({"explore", "--strategy", "record-first", "--fault", "crash",
                           "--counterexample", "--format", "json"});
  REQUIRE(json.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(json.out);
  CHECK(j["outcome"] == "lost");
  CHECK(j["variant"] == "crash at AfterRecordCommitted");
  CHECK(j["figures"]["reserved"] == 0);
}

TEST_CASE("seeded runs: the same seed gives the same runs, and each replays", "[explore][seeded]") {
  CliResult first = RunCli({"explore", "--seed", "11", "--runs", "25", "--format", "json"});
  CliResult second = RunCli({"explore", "--seed", "11", "--runs", "25", "--format", "json"});
  REQUIRE(first.exit_code == 0);
  CHECK(WithoutTiming(first.out) == WithoutTiming(second.out));
  nlohmann::json j = nlohmann::json::parse(first.out);
  CHECK(j["seed"] == 11);
  // A failing run of check-then-process, replayed alone, fails the same way.
  for (const auto& row : j["rows"]) {
    if (row["strategy"] != "check-then-process") continue;
    REQUIRE_FALSE(row["failingRuns"].empty());
    int64_t run = row["failingRuns"][0].get<int64_t>();
    CliResult replay = RunCli({"explore", "--seed", "11", "--replay", std::to_string(run),
                               "--strategy", "check-then-process", "--format", "json"});
    REQUIRE(replay.exit_code == 0);
    CHECK(nlohmann::json::parse(replay.out)["outcome"] != "once");
    CliResult text = RunCli({"explore", "--seed", "11", "--replay", std::to_string(run),
                             "--strategy", "check-then-process"});
    CHECK(text.out.find("plan: ") != std::string::npos);
    CHECK(text.out.find(" ms  ") != std::string::npos);
  }
}

TEST_CASE("seeded runs: every run's outcome is what its replay gives", "[explore][seeded]") {
  std::vector<const explore::Strategy*> strategies(explore::AllStrategies().begin(),
                                                   explore::AllStrategies().end());
  explore::Scheduler scheduler(strategies);
  explore::RandomResult result = explore::ExploreRandom(scheduler, strategies, 3, 20);
  for (const explore::RandomRow& row : result.rows) {
    int64_t failing = 0;
    for (int64_t k = 0; k < 20; ++k) {
      explore::ScheduleResult a = explore::RunRandom(scheduler, *row.strategy, 3, k);
      explore::ScheduleResult b = explore::RunRandom(scheduler, *row.strategy, 3, k);
      INFO(row.strategy->name << " run " << k);
      CHECK(a.steps == b.steps);
      CHECK(a.outcome == b.outcome);
      CHECK(a.picks.size() >= 1);
      if (explore::IsFailing(a.outcome)) {
        CHECK(std::find(row.failing.begin(), row.failing.end(), k) != row.failing.end());
        ++failing;
      }
    }
    CHECK(failing == static_cast<int64_t>(row.failing.size()));
  }
  // The plans are larger than the matrix's: three or four instances.
  explore::Plan plan = explore::RandomPlan(*explore::FindStrategy("inbox"), 3, 0);
  CHECK(plan.instances.size() >= 3);
}

TEST_CASE("seeded runs without the producer's resend: the inbox holds", "[explore][seeded]") {
  CliResult r = RunCli({"explore", "--seed", "2", "--runs", "40", "--strategy", "inbox",
                        "--strategy", "claim-last", "--fault", "duplicate", "--fault", "crash",
                        "--fault", "concurrent", "--fault", "lost-ack", "--fault",
                        "second-subscriber", "--expect-safe", "inbox", "--expect-safe",
                        "claim-last"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("--fault duplicate --fault crash") != std::string::npos);  // the replay hint
}

TEST_CASE("seeded runs say which fault the failures came from", "[explore][seeded]") {
  CliResult r = RunCli({"explore", "--seed", "1", "--runs", "60", "--strategy", "inbox",
                        "--strategy", "natural-key", "--strategy", "naive"});
  CHECK(r.exit_code == 0);
  // The inbox fails only where the producer resent under a new MessageId.
  CHECK(r.out.find("\n  inbox: all from producer duplicates (all ") != std::string::npos);
  CHECK(r.out.find("\n  natural-key:") == std::string::npos);  // no failure, no line
  CHECK(r.out.find("\n  naive: no one fault") != std::string::npos);
  CliResult json = RunCli({"explore", "--seed", "1", "--runs", "60", "--strategy", "inbox",
                           "--format", "json"});
  auto row = nlohmann::json::parse(json.out)["rows"][0];
  CHECK(row["failuresCameFrom"] == nlohmann::json::array({"producer-duplicate"}));
  CHECK(row["byFault"]["producer-duplicate"]["failingWithout"] == 0);
  CHECK(row["byFault"]["producer-duplicate"]["runsWithout"].get<int64_t>() > 0);
  CHECK(row["byFault"]["producer-duplicate"]["failingWith"] == row["failingRuns"].size());
  // Without producer resends in the mix, nothing is left to blame: no failing run.
  CliResult without = RunCli({"explore", "--seed", "1", "--runs", "60", "--strategy", "inbox",
                              "--fault", "duplicate", "--fault", "crash", "--fault", "lost-ack"});
  CHECK(without.out.find("where the failures came from") == std::string::npos);
}

TEST_CASE("a reconcile counterexample is not headed as a failure", "[explore][cli]") {
  CliResult r = RunCli({"explore", "--strategy", "email", "--fault", "crash", "--counterexample"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("shortest schedule flagged for reconciliation (not a failure): ") != std::string::npos);
  CHECK(r.out.find("shortest failing schedule") == std::string::npos);
  CliResult twice = RunCli({"explore", "--strategy", "naive", "--fault", "duplicate", "--counterexample"});
  CHECK(twice.out.find("shortest failing schedule: ") != std::string::npos);
}

}  // namespace explore_cli_test
