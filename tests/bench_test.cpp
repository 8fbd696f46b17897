// The bench: the seeded workload, each strategy's counts on a small run (threads and
// processes), the JSON view, and the command's exit statuses. No timing is asserted: the
// figures that depend on the machine are only checked to be there.
#include "bench/bench.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "bench/bench_report.h"
#include "bench/workload.h"
#include "support.h"

using namespace dedupsim;
using dedupsim::testing::RunCli;

namespace {

const StrategyResult& ResultOf(const BenchReport& report, Strategy strategy) {
  for (const StrategyResult& r : report.results) {
    if (r.strategy == strategy) return r;
  }
  FAIL("no result for " << ToString(strategy));
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("the workload is the same for the same seed and counts its duplicates", "[bench]") {
  Workload a = MakeWorkload({500, 0.3, 7});
  Workload b = MakeWorkload({500, 0.3, 7});
  Workload c = MakeWorkload({500, 0.3, 8});
  REQUIRE(a.deliveries.size() == 500);
  CHECK(a.orders.size() == 350);
  CHECK(a.duplicates == 150);
  for (size_t i = 0; i < a.deliveries.size(); ++i) {
    CHECK(a.deliveries[i].message_id == b.deliveries[i].message_id);
  }
  CHECK(a.deliveries.front().message_id != c.deliveries.front().message_id);

  std::set<std::string> order_ids, book_ids, message_ids;
  int64_t sum = 0;
  for (const OrderPlaced& o : a.orders) {
    order_ids.insert(o.order_id);
    book_ids.insert(o.book_id);
    message_ids.insert(o.message_id);
    sum += o.quantity;
    CHECK(o.quantity >= 1);
  }
  CHECK(order_ids.size() == 350);
  CHECK(book_ids.size() == 350);  // one book per order: the check can count per order
  CHECK(sum == a.expected_reserved);
  std::set<std::string> delivered;
  for (const OrderPlaced& d : a.deliveries) {
    CHECK(message_ids.count(d.message_id) == 1);
    delivered.insert(d.message_id);
  }
  CHECK(delivered.size() == 350);  // every order is delivered at least once
}

TEST_CASE("the workload's edges: no duplicates, all duplicates, bad input", "[bench]") {
  CHECK(MakeWorkload({100, 0.0, 1}).duplicates == 0);
  Workload all = MakeWorkload({100, 1.0, 1});
  CHECK(all.orders.size() == 1);
  CHECK(all.duplicates == 99);
  CHECK_THROWS_AS(MakeWorkload({0, 0.3, 1}), std::invalid_argument);
  CHECK_THROWS_AS(MakeWorkload({10, 1.5, 1}), std::invalid_argument);
  CHECK_THROWS_AS(MakeWorkload({10, -0.1, 1}), std::invalid_argument);
}

TEST_CASE("a small bench: each strategy's counts, one instance", "[bench]") {
  BenchOptions options;
  options.workload = {500, 0.3, 11};
  BenchReport report = RunBench(options, nullptr);
  REQUIRE(report.results.size() == 5);
  CHECK(report.results.front().strategy == Strategy::kRaw);
  CHECK(report.duplicates == 150);
  CHECK(report.distinct_orders == 350);

  for (Strategy s : {Strategy::kRaw, Strategy::kInbox, Strategy::kNaturalKey}) {
    const StrategyResult& r = ResultOf(report, s);
    INFO(ToString(s));
    CHECK(r.check.held());
    CHECK(r.check.doubled == 0);
    CHECK(r.check.lost == 0);
    CHECK(r.processed == 350);
    CHECK(r.skipped == report.duplicates);
    CHECK(r.transactions.commits == 350);    // one per processed message
    CHECK(r.transactions.rollbacks == 150);  // one per skipped duplicate
    CHECK(r.messages_per_second > 0);
    CHECK(r.p99 >= r.p50);
  }
  const StrategyResult& naive = ResultOf(report, Strategy::kNaive);
  CHECK(naive.processed == 500);
  CHECK(naive.check.doubled == report.duplicates);  // every duplicate delivery applied again
  CHECK(naive.check.lost == 0);
  CHECK(naive.transactions.commits == 500);
  CHECK_FALSE(naive.check.held());

  // Without crashes or a second instance, check-then-process's window never opens.
  const StrategyResult& check_then = ResultOf(report, Strategy::kCheckThenProcess);
  CHECK(check_then.check.held());
  CHECK(check_then.skipped == report.duplicates);
  CHECK(check_then.transactions.commits == 2 * 350);  // stock, then the Inbox row

  CHECK(report.promises_held());
  REQUIRE(report.inbox_to_raw.has_value());
  REQUIRE(report.inbox_to_naive.has_value());
  CHECK(*report.inbox_to_raw > 0);
}

TEST_CASE("a small bench with two processes keeps the inbox's promise", "[bench]") {
  BenchOptions options;
  options.workload = {400, 0.3, 5};
  options.instances = 2;
  options.mode = InstanceMode::kProcesses;
  options.strategies = {Strategy::kRaw, Strategy::kNaive, Strategy::kInbox, Strategy::kNaturalKey};
  BenchReport report = RunBench(options, nullptr);
  for (Strategy s : {Strategy::kRaw, Strategy::kInbox, Strategy::kNaturalKey}) {
    const StrategyResult& r = ResultOf(report, s);
    INFO(ToString(s));
    CHECK(r.check.held());
    CHECK(r.processed + r.skipped == 400);
    CHECK(r.skipped == report.duplicates);
  }
  CHECK(ResultOf(report, Strategy::kNaive).check.doubled == report.duplicates);
}

TEST_CASE("bench repeats rounds and reports each strategy once", "[bench]") {
  BenchOptions options;
  options.workload = {200, 0.3, 3};
  options.strategies = {Strategy::kInbox, Strategy::kInbox, Strategy::kRaw};
  options.repeat = 3;
  options.instances = 2;
  BenchReport report = RunBench(options, nullptr);
  REQUIRE(report.results.size() == 2);
  CHECK(report.results[0].strategy == Strategy::kInbox);
  CHECK(report.results[0].round_messages_per_second.size() == 3);
  CHECK(report.results[0].check.held());
}

TEST_CASE("bench options out of range are refused", "[bench]") {
  BenchOptions options;
  options.instances = 0;
  CHECK_THROWS_AS(RunBench(options, nullptr), std::invalid_argument);
  options.instances = 1;
  options.workload.duplicate_rate = 2;
  CHECK_THROWS_AS(RunBench(options, nullptr), std::invalid_argument);
}

TEST_CASE("dedupsim bench --format json: one result per strategy", "[bench][cli]") {
  auto r = RunCli({"bench", "--messages", "300", "--format", "json", "--seed", "4"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());  // no progress display when stderr is not a terminal
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["command"] == "bench");
  REQUIRE(j["results"].size() == 5);
  std::vector<std::string> names;
  for (const auto& e : j["results"]) {
    names.push_back(e["strategy"].get<std::string>());
    CHECK(e["messagesPerSecond"].get<double>() > 0);
    CHECK(e.contains("transactionsPerSecond"));
    CHECK(e.contains("p50Us"));
    CHECK(e.contains("p99Us"));
    CHECK(e.contains("busyWaits"));
    CHECK(e.contains("duplicatesSkipped"));
    CHECK(e.contains("doubled"));
    CHECK(e.contains("lost"));
  }
  CHECK(names ==
        std::vector<std::string>{"raw", "naive", "check-then-process", "inbox", "natural-key"});
  CHECK(j["results"][1]["doubled"] == j["duplicates"]);
  CHECK(j["ratios"].contains("inboxToRaw"));
  CHECK(j["ratios"].contains("inboxToNaive"));
  CHECK(j["promisesHeld"] == true);
}

TEST_CASE("dedupsim bench prints a table, and the strategies asked for only", "[bench][cli]") {
  auto r = RunCli({"bench", "--messages", "200", "--strategy", "inbox", "--strategy", "raw",
                   "--journal", "delete", "--synchronous", "full"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("strategy") != std::string::npos);
  CHECK(r.out.find("inbox/raw") != std::string::npos);
  CHECK(r.out.find("naive ") == std::string::npos);
  CHECK(r.out.find("journal delete, synchronous full") != std::string::npos);
}

TEST_CASE("dedupsim bench: bad input exits 2 with one line", "[bench][cli]") {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"bench", "--messages", "0"},
           {"bench", "--duplicate-rate", "1.1"},
           {"bench", "--duplicate-rate", "-0.1"},
           {"bench", "--instances-count", "0"},
           {"bench", "--instances-count", "65"},
           {"bench", "--instances", "fibers"},
           {"bench", "--strategy", "magic"},
       }) {
    auto r = RunCli(args);
    INFO(args[1] << " " << args[2]);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(dedupsim::testing::SplitLines(r.err).size() == 1);
  }
}
