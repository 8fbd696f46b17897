// A counterexample read as deliveries: each attempt's steps, what it committed and how it
// ended, all read from the replay's trace. The check-then-process crash is the two-step
// story (deliver, crash after the stock commit; redeliver, reserve again), the concurrent
// copies are two interleaved deliveries, and nothing is said that the trace does not show.
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <numeric>

#include "explore/deliveries.h"
#include "explore/explorer.h"
#include "explore/faults.h"
#include "explore/strategies.h"
#include "support.h"

namespace explore_deliveries_test {

using namespace dedupsim;
using namespace dedupsim::explore;
using dedupsim::testing::CliResult;
using dedupsim::testing::RunCli;

namespace {

Explorer& Shared() {
  static Explorer explorer;
  return explorer;
}

ScheduleResult Shortest(const std::string& strategy, const std::string& fault,
                        std::vector<TraceEvent>* events = nullptr) {
  Explorer& e = Shared();
  CellResult cell = e.ExploreCell(*FindStrategy(strategy), *FindFault(fault));
  REQUIRE(cell.shortest);
  Recorder recorder;
  ScheduleResult run = e.ReplayShortest(cell, &recorder);
  if (events != nullptr) *events = recorder.Events();
  return run;
}

using Strings = std::vector<std::string>;

}  // namespace

TEST_CASE("check-then-process under crash: two deliveries, the first commits and dies",
          "[explore][deliveries]") {
  ScheduleResult run = Shortest("check-then-process", "crash");
  REQUIRE(run.deliveries.size() == 2);
  const DeliveryAttempt& first = run.deliveries[0];
  const DeliveryAttempt& again = run.deliveries[1];
  // The same copy on the same instance: attempt 1, then the broker's redelivery, attempt 2.
  CHECK(first.instance == "A");
  CHECK(again.instance == "A");
  CHECK(first.message == again.message);
  CHECK(first.copy == 1);
  CHECK(again.copy == 1);
  CHECK(first.copies == 1);
  CHECK(first.attempt == 1);
  CHECK(again.attempt == 2);
  CHECK(first.steps == std::vector<size_t>{1, 2, 3});
  CHECK(again.steps == std::vector<size_t>{4, 5, 6, 7});
  CHECK(first.did ==
        Strings{"SELECT Inbox: no row", "UPDATE StockItems", "crash at AfterStockCommitted"});
  // The update ran outside a transaction: committed before the crash, so it stays.
  CHECK(first.committed == Strings{"UPDATE StockItems"});
  CHECK(first.undone.empty());
  CHECK(first.end == DeliveryEnd::kCrashed);
  CHECK(first.ended.find("crashed at AfterStockCommitted") == 0);
  // The redelivery finds no Inbox row and reserves again.
  CHECK(again.did == Strings{"SELECT Inbox: no row", "UPDATE StockItems", "AfterStockCommitted",
                             "INSERT Inbox"});
  CHECK(again.committed == Strings{"UPDATE StockItems", "INSERT Inbox"});
  CHECK(again.end == DeliveryEnd::kAcked);
  CHECK(again.ended == "acked (processed)");
  CHECK(FormatDeliveries(run.deliveries, "") ==
        "2 deliveries:\n"
        "  1  A  message " +
            first.message.substr(0, 8) +
            ", attempt 1, steps 1-3:\n"
            "        did: SELECT Inbox: no row, UPDATE StockItems, crash at AfterStockCommitted\n"
            "        committed: UPDATE StockItems\n"
            "        ended: crashed at AfterStockCommitted: not acked, so the broker delivers it "
            "again\n"
            "  2  A  message " +
            first.message.substr(0, 8) +
            ", attempt 2, steps 4-7:\n"
            "        did: SELECT Inbox: no row, UPDATE StockItems, AfterStockCommitted, INSERT "
            "Inbox\n"
            "        committed: UPDATE StockItems, INSERT Inbox\n"
            "        ended: acked (processed)\n");
}

TEST_CASE("check-then-process under concurrent: two copies on A and B, interleaved",
          "[explore][deliveries]") {
  ScheduleResult run = Shortest("check-then-process", "concurrent");
  REQUIRE(run.deliveries.size() == 2);
  const DeliveryAttempt& a = run.deliveries[0];
  const DeliveryAttempt& b = run.deliveries[1];
  CHECK(a.instance == "A");
  CHECK(b.instance == "B");
  CHECK(a.copy == 1);
  CHECK(b.copy == 2);
  CHECK(a.copies == 2);
  CHECK(a.attempt == 1);
  CHECK(b.attempt == 1);
  // Every step is in exactly one delivery, and it is that instance's.
  std::vector<size_t> all;
  for (const DeliveryAttempt& d : run.deliveries) {
    for (size_t s : d.steps) {
      all.push_back(s);
      CHECK(run.steps[s - 1].substr(0, 1) == d.instance);
    }
  }
  std::sort(all.begin(), all.end());
  std::vector<size_t> expected(run.steps.size());
  std::iota(expected.begin(), expected.end(), size_t{1});
  CHECK(all == expected);
  // Interleaved: B looked (its first step) before A's last step, A's Inbox row.
  CHECK(b.steps.front() < a.steps.back());
  CHECK(a.committed == Strings{"UPDATE StockItems", "INSERT Inbox"});
  // B's insert hit A's key: only its update committed.
  CHECK(b.committed == Strings{"UPDATE StockItems"});
  CHECK(b.did.back() == "INSERT Inbox: constraint 1555");
  CHECK(a.end == DeliveryEnd::kAcked);
  CHECK(b.end == DeliveryEnd::kAcked);
}

TEST_CASE("deliveries: a write inside a transaction the crash cut is rolled back, not committed",
          "[explore][deliveries]") {
  // inbox under crash at COMMIT... is once; its schedule is replayed by hand: crash at
  // BeforeCommit, after the INSERT and the UPDATE, inside the transaction.
  Explorer& e = Shared();
  std::vector<Plan> plans = e.Plans(*FindStrategy("inbox"), *FindFault("crash"));
  const Plan* plan = nullptr;
  for (const Plan& p : plans) {
    if (p.variant == "crash at BeforeCommit") plan = &p;
  }
  REQUIRE(plan != nullptr);
  std::vector<int> picks(9, 0);  // one instance: 4 steps, the crash's, then 5 again
  Recorder recorder;
  std::optional<ScheduleResult> run = e.RunExactly(*plan, picks, &recorder);
  REQUIRE(run);
  std::vector<DeliveryAttempt> d = DeliveriesOf(*plan, *run, recorder.Events());
  REQUIRE(d.size() == 2);
  CHECK(d[0].did == Strings{"BEGIN", "INSERT Inbox", "UPDATE StockItems", "crash at BeforeCommit"});
  CHECK(d[0].committed.empty());
  CHECK(d[0].undone == Strings{"INSERT Inbox", "UPDATE StockItems"});
  CHECK(d[0].end == DeliveryEnd::kCrashed);
  CHECK(d[1].committed == Strings{"INSERT Inbox", "UPDATE StockItems"});
  CHECK(d[1].undone.empty());
  CHECK(d[1].end == DeliveryEnd::kAcked);
}

TEST_CASE("deliveries: a duplicate skipped, and the provider's writes named as its own",
          "[explore][deliveries]") {
  // shared-key under second-subscriber: the email subscriber finds the stock's row and
  // skips; two subscribers, each its own first copy.
  ScheduleResult shared = Shortest("shared-key", "second-subscriber");
  REQUIRE(shared.deliveries.size() == 2);
  CHECK(shared.deliveries[0].subscriber == "shared-key");
  CHECK(shared.deliveries[1].subscriber == "shared-key-email");
  CHECK(shared.deliveries[1].copy == 1);
  CHECK(shared.deliveries[1].end == DeliveryEnd::kSkipped);
  CHECK(shared.deliveries[1].ended == "skipped as a duplicate, acked");
  // email-reconcile: the provider's transaction commits on the second file.
  ScheduleResult email = Shortest("email-reconcile", "concurrent");
  REQUIRE(email.deliveries.size() == 2);
  CHECK(email.deliveries[0].committed ==
        Strings{"INSERT Inbox", "INSERT SentEmails (email provider)",
                "INSERT ProviderRequests (email provider)", "UPDATE Inbox"});
  CHECK(email.deliveries[1].end == DeliveryEnd::kReconcile);
}

TEST_CASE("dedupsim check prints the deliveries first, and in JSON", "[explore][deliveries][cli]") {
  std::string file =
      std::string(DEDUPSIM_SOURCE_DIR) + "/examples/consumers/check-then-process.toml";
  CliResult text = RunCli({"check", file, "--fault", "crash"});
  CHECK(text.exit_code == 1);
  size_t head = text.out.find(
      "crash (fails the check): 14 of 20 schedules fail; the shortest: 2 deliveries, 7 steps, "
      "crash at AfterStockCommitted, ends twice:\n  2 deliveries:\n    1  A  message ");
  REQUIRE(head != std::string::npos);
  size_t steps = text.out.find("  7 steps:\n    1  A  SELECT Inbox\n", head);
  CHECK(steps != std::string::npos);
  CHECK(text.out.find("          committed: UPDATE StockItems\n"
                      "          ended: crashed at AfterStockCommitted",
                      head) < steps);
  CliResult json = RunCli({"check", file, "--fault", "crash", "--format", "json"});
  auto j = nlohmann::json::parse(json.out);
  const auto& d = j["consumers"][0]["cells"][0]["counterexample"]["deliveries"];
  REQUIRE(d.size() == 2);
  CHECK(d[0]["instance"] == "A");
  CHECK(d[0]["attempt"] == 1);
  CHECK(d[0]["committed"] == nlohmann::json::array({"UPDATE StockItems"}));
  CHECK(d[0]["end"] == "crashed");
  CHECK(d[1]["attempt"] == 2);
  CHECK(d[1]["end"] == "acked");
  CHECK(d[1]["steps"] == nlohmann::json::array({4, 5, 6, 7}));
  // explore --counterexample: the same deliveries, above the trace.
  CliResult explored = RunCli(
      {"explore", "--strategy", "check-then-process", "--fault", "crash", "--counterexample"});
  CHECK(explored.exit_code == 0);
  size_t deliveries = explored.out.find("\n2 deliveries:\n  1  A  message ");
  size_t trace = explored.out.find("\ntrace:\n");
  CHECK(deliveries != std::string::npos);
  CHECK(deliveries < trace);
  CliResult explore_json = RunCli({"explore", "--strategy", "check-then-process", "--fault",
                                   "crash", "--counterexample", "--format", "json"});
  auto k = nlohmann::json::parse(explore_json.out);
  CHECK(k["deliveries"].size() == 2);
  CHECK(k["deliveries"][0]["ended"].get<std::string>().find("crashed at AfterStockCommitted") == 0);
}

}  // namespace explore_deliveries_test
