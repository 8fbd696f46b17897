// On PostgreSQL too, the pair's race follows the options, not the scheduler
// (RunStorePairOnServer in scenarios/concurrent.cpp): both instances connect before the
// race, and with stagger < hold the first commits only once the server shows the second
// waiting (or the second has finished without meeting a lock). Under a CPU hog a starved
// thread, a slow connect or a slow server backend changes timings, never the outcome.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "pg_support.h"

namespace races_pg_test {

using dedupsim::testing::CliResult;
using dedupsim::testing::CpuHog;
using dedupsim::testing::RunPg;

namespace {

nlohmann::json RunJson(const std::vector<std::string>& args, const std::string& schema) {
  CliResult r = RunPg(args, schema);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

}  // namespace

// PostgreSQL's waits are the server's (waitedOn, lockMode, blockedBy): no busy handler runs,
// so no event carries a busy count and no figure a busy retry, not even a 0 (issue 28: every
// event said "busyCalls": 0). Mutation caught: EventToJson writing the count unmeasured
// (trace_json.cpp: `if (e.busy_calls) j["busyCalls"] = *e.busy_calls;` ->
// `j["busyCalls"] = e.busy_calls.value_or(0);`).
TEST_CASE("on PostgreSQL no event or figure claims a busy-handler count", "[postgres]") {
  const nlohmann::json j = RunJson({"run", "concurrent", "--format", "json", "--trace"},
                                   "t_no_busy_calls");
  CHECK(j["secondWaited"] == true);
  CHECK_FALSE(j.contains("busyRetries"));
  int statements = 0;
  for (const auto& e : j["events"]) {
    INFO(e.dump());
    CHECK_FALSE(e.contains("busyCalls"));
    if (e["kind"] == "sql") ++statements;
  }
  CHECK(statements >= 6);
}

// A gap of 10 ms between B's release and A's commit: without the events, B would have to
// connect, begin and reach its statement within it; with them, A holds until B waits.
TEST_CASE("on PostgreSQL the pair follows the options under a CPU hog", "[postgres][hog]") {
  CpuHog hog;
  REQUIRE(hog.size() >= 4);
  for (int i = 0; i < 5; ++i) {
    nlohmann::json same =
        RunJson({"run", "concurrent", "--format", "json", "--hold-ms", "100", "--stagger-ms", "90"},
                "t_hog_same");
    INFO(same.dump());
    CHECK(same["secondWaited"] == true);
    CHECK(same["waitedOn"] == "key Inbox");
    CHECK(same["reserved"] == 2);

    nlohmann::json different = RunJson({"run", "concurrent-different", "--format", "json",
                                        "--hold-ms", "100", "--stagger-ms", "90"},
                                       "t_hog_different");
    INFO(different.dump());
    CHECK(different["secondWaited"] == true);
    CHECK(different["waitedOn"] == "row StockItems");
    CHECK(different["differentBooksSecondWaited"] == false);

    // stagger >= hold: B starts only after A has ended, so it meets no lock.
    nlohmann::json after =
        RunJson({"run", "concurrent", "--format", "json", "--hold-ms", "40", "--stagger-ms", "90"},
                "t_hog_after");
    INFO(after.dump());
    CHECK(after["secondWaited"] == false);
    CHECK(after["waitedOn"] == "none");
    CHECK(after["reserved"] == 2);
  }
}

}  // namespace races_pg_test
