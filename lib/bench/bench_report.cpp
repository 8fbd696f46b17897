#include "bench/bench_report.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>

namespace dedupsim {

namespace {

double Round(double value, int digits) {
  double scale = std::pow(10.0, digits);
  return std::round(value * scale) / scale;
}

double Micros(std::chrono::nanoseconds ns) {
  return Round(static_cast<double>(ns.count()) / 1000.0, 1);
}

std::string Settings(const BenchOptions& o) {
  if (o.postgres()) {
    return fmt::format("postgres, synchronous_commit {}, {} instance{} ({}){}",
                       o.synchronous_commit ? "on" : "off", o.instances,
                       o.instances == 1 ? "" : "s", ToString(o.mode),
                       o.workload.books > 0 ? fmt::format(", {} books", o.workload.books) : "");
  }
  return fmt::format("journal {}, synchronous {}, {} instance{} ({}){}",
                     ToString(o.settings.journal), ToString(o.settings.synchronous), o.instances,
                     o.instances == 1 ? "" : "s", ToString(o.mode),
                     o.checkpoints_in_loop ? "" : ", no checkpoint while timed");
}

// The broker's share of the time per message through it: 1 - (through the broker) /
// (database only), from the same round's figures; nullopt without both.
std::optional<double> BrokerShare(const StrategyResult& r) {
  if (!r.broker || r.messages_per_second <= 0 || r.broker->messages_per_second <= 0) {
    return std::nullopt;
  }
  return 1.0 - r.broker->messages_per_second / r.messages_per_second;
}

}  // namespace

nlohmann::ordered_json BenchReportToJson(const BenchReport& report) {
  const BenchOptions& o = report.options;
  nlohmann::ordered_json j;
  j["command"] = "bench";
  j["messages"] = o.workload.messages;
  j["duplicateRate"] = o.workload.duplicate_rate;
  j["distinctOrders"] = report.distinct_orders;
  j["duplicates"] = report.duplicates;
  j["seed"] = o.workload.seed;
  if (o.workload.books > 0) j["books"] = o.workload.books;
  if (o.postgres()) {
    j["backend"] = "postgres";
    j["synchronousCommit"] = o.synchronous_commit ? "on" : "off";
  } else {
    j["journal"] = ToString(o.settings.journal);
    j["synchronous"] = ToString(o.settings.synchronous);
  }
  j["instancesCount"] = o.instances;
  j["instances"] = ToString(o.mode);
  j["repeat"] = o.repeat;
  if (!o.postgres()) j["checkpoints"] = o.checkpoints_in_loop ? "inside" : "after";
  if (o.brokers != nullptr) j["broker"] = ToString(o.brokers->kind());
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (const StrategyResult& r : report.results) {
    nlohmann::ordered_json e;
    e["strategy"] = ToString(r.strategy);
    e["messagesPerSecond"] = Round(r.messages_per_second, 0);
    e["transactionsPerSecond"] = Round(r.transactions_per_second, 0);
    e["messages"] = r.messages;
    e["processed"] = r.processed;
    e["duplicatesSkipped"] = r.skipped;
    e["commits"] = r.transactions.commits;
    e["rollbacks"] = r.transactions.rollbacks;
    e["seconds"] = Round(std::chrono::duration<double>(r.elapsed).count(), 4);
    e["p50Us"] = Micros(r.p50);
    e["p99Us"] = Micros(r.p99);
    e["busyWaits"] = r.busy.calls;
    e["busyWaitedMs"] = Round(static_cast<double>(r.busy.waited.count()) / 1000.0, 1);
    if (o.postgres()) {
      // Counted by the instances' connections; the server's own view of the setting.
      e["statements"] = r.statements;
      e["statementsPerMessage"] =
          r.messages > 0
              ? Round(static_cast<double>(r.statements) / static_cast<double>(r.messages), 3)
              : 0.0;
      e["serverSynchronousCommit"] = r.synchronous_commit;
    }
    e["reserved"] = r.check.reserved;
    e["expectedReserved"] = r.check.expected_reserved;
    e["doubled"] = r.check.doubled;
    e["doubledOrders"] = r.check.doubled_orders;
    e["lost"] = r.check.lost;
    e["invariantHeld"] = r.check.held();
    e["promisesExactlyOnce"] = r.promises_exactly_once;
    nlohmann::ordered_json rounds = nlohmann::ordered_json::array();
    for (double v : r.round_messages_per_second) rounds.push_back(Round(v, 0));
    e["roundsMessagesPerSecond"] = rounds;
    if (r.broker) {
      const BrokerRun& b = *r.broker;
      nlohmann::ordered_json k;
      k["server"] = b.server;
      k["messagesPerSecond"] = Round(b.messages_per_second, 0);
      k["databaseOnlyMessagesPerSecond"] = Round(r.messages_per_second, 0);
      if (auto share = BrokerShare(r)) k["brokerShareOfTime"] = Round(*share, 3);
      k["publishPerSecond"] = Round(b.publish_per_second, 0);
      k["publishSeconds"] = Round(std::chrono::duration<double>(b.publish_elapsed).count(), 4);
      k["seconds"] = Round(std::chrono::duration<double>(b.elapsed).count(), 4);
      k["p50Us"] = Micros(b.p50);
      k["p99Us"] = Micros(b.p99);
      k["sent"] = b.stats.sent;
      k["accepted"] = b.stats.accepted;
      k["dropped"] = b.stats.dropped;
      k["delivered"] = b.stats.deliveries;
      k["acked"] = b.stats.acked;
      k["ackRefused"] = b.ack_refused;
      k["redelivered"] = b.stats.redelivered;
      k["processed"] = b.processed;
      k["duplicatesSkipped"] = b.skipped;
      k["reserved"] = b.check.reserved;
      k["expectedReserved"] = b.check.expected_reserved;
      k["doubled"] = b.check.doubled;
      k["doubledOrders"] = b.check.doubled_orders;
      k["lost"] = b.check.lost;
      k["invariantHeld"] = b.check.held();
      nlohmann::ordered_json broker_rounds = nlohmann::ordered_json::array();
      for (double v : b.round_messages_per_second) broker_rounds.push_back(Round(v, 0));
      k["roundsMessagesPerSecond"] = broker_rounds;
      e["throughBroker"] = k;
    }
    results.push_back(e);
  }
  j["results"] = results;
  nlohmann::ordered_json ratios = nlohmann::ordered_json::object();
  if (report.inbox_to_raw) ratios["inboxToRaw"] = Round(*report.inbox_to_raw, 3);
  if (report.inbox_to_naive) ratios["inboxToNaive"] = Round(*report.inbox_to_naive, 3);
  j["ratios"] = ratios;
  j["promisesHeld"] = report.promises_held();
  return j;
}

std::string FormatBenchTable(const BenchReport& report) {
  const BenchOptions& o = report.options;
  std::string out =
      fmt::format("bench: {} messages ({} orders + {} duplicates, seed {}), {}{}\n\n",
                  o.workload.messages, report.distinct_orders, report.duplicates, o.workload.seed,
                  Settings(o), o.repeat > 1 ? fmt::format(", median of {} rounds", o.repeat) : "");
  out +=
      fmt::format("{:<19} {:>9} {:>9} {:>9} {:>8} {:>8} {:>9} {:>10} {:>7} {:>6}  {}\n", "strategy",
                  "msg/s", "tx/s", "processed", "skipped", "p50 us", "p99 us",
                  o.postgres() ? "stmts/msg" : "busy waits", "doubled", "lost", "check");
  for (const StrategyResult& r : report.results) {
    std::string check;
    if (r.check.held()) {
      check = "ok";
    } else {
      check = fmt::format("reserved {} of {}{}", r.check.reserved, r.check.expected_reserved,
                          r.promises_exactly_once ? " FAILED" : "");
    }
    // PostgreSQL has no busy handler: its column is the statements sent per message.
    std::string waits_or_statements =
        o.postgres()
            ? fmt::format("{:.2f}", r.messages > 0 ? static_cast<double>(r.statements) /
                                                         static_cast<double>(r.messages)
                                                   : 0.0)
            : fmt::format("{}", r.busy.calls);
    out += fmt::format(
        "{:<19} {:>9.0f} {:>9.0f} {:>9} {:>8} {:>8.1f} {:>9.1f} {:>10} {:>7} {:>6}  {}\n",
        ToString(r.strategy), r.messages_per_second, r.transactions_per_second, r.processed,
        r.skipped, Micros(r.p50), Micros(r.p99), waits_or_statements, r.check.doubled, r.check.lost,
        check);
  }
  if (o.brokers != nullptr && !report.results.empty() && report.results.front().broker) {
    out += fmt::format(
        "\nthrough the broker: {} (--broker {}); every delivery published, then one consumer receiving, handling "
        "and acking one at a time\n",
        report.results.front().broker->server, ToString(o.brokers->kind()));
    out += fmt::format("{:<19} {:>9} {:>9} {:>7} {:>9} {:>9} {:>9} {:>6} {:>8} {:>7} {:>6}  {}\n",
                       "strategy", "msg/s", "db msg/s", "broker", "publish/s", "sent",
                       "delivered", "acked", "redeliv.", "doubled", "lost", "check");
    for (const StrategyResult& r : report.results) {
      if (!r.broker) continue;
      const BrokerRun& b = *r.broker;
      std::optional<double> share = BrokerShare(r);
      std::string check = b.check.held()
                              ? "ok"
                              : fmt::format("reserved {} of {}{}", b.check.reserved,
                                            b.check.expected_reserved,
                                            r.promises_exactly_once ? " FAILED" : "");
      out += fmt::format(
          "{:<19} {:>9.0f} {:>9.0f} {:>7} {:>9.0f} {:>9} {:>9} {:>6} {:>8} {:>7} {:>6}  {}\n",
          ToString(r.strategy), b.messages_per_second, r.messages_per_second,
          share ? fmt::format("{:.0f}%", *share * 100) : "-", b.publish_per_second, b.stats.sent,
          b.stats.deliveries, b.stats.acked, b.stats.redelivered, b.check.doubled, b.check.lost,
          check);
    }
    out += "broker: its share of the time per message, 1 - msg/s / db msg/s (same rounds)\n";
  }
  std::vector<std::string> ratios;
  if (report.inbox_to_raw) ratios.push_back(fmt::format("inbox/raw {:.3f}", *report.inbox_to_raw));
  if (report.inbox_to_naive) {
    ratios.push_back(fmt::format("inbox/naive {:.3f}", *report.inbox_to_naive));
  }
  if (!ratios.empty()) out += fmt::format("\n{}\n", fmt::join(ratios, "   "));
  return out;
}

}  // namespace dedupsim
