#include "soak/soak_report.h"

#include <fmt/format.h>

#include <cmath>

namespace dedupsim {

bool SoakReport::held() const { return failures().empty(); }

std::vector<std::string> SoakReport::failures() const {
  std::vector<std::string> out;
  if (check.doubled > 0) {
    out.push_back(fmt::format("doubled: {} extra applications over {} orders", check.doubled,
                              check.doubled_orders));
  }
  if (check.lost > 0 && reach_unknown) {
    out.push_back(fmt::format("lost or not reached: {} orders never applied (the broker does not "
                              "say which of them had a copy acked)",
                              check.lost));
  } else if (check.lost > 0) {
    out.push_back(fmt::format("lost: {} orders never applied, though a copy of each was acked",
                              check.lost));
  }
  if (check.not_reached > 0) {
    out.push_back(fmt::format("not reached: {} orders no copy of which was acked when the run "
                              "ended (not lost: no consumer finished one)",
                              check.not_reached));
  }
  if (check.odd > 0)
    out.push_back(fmt::format("{} books with a partial quantity reserved", check.odd));
  if (broker.acked != broker.entries) {
    out.push_back(
        fmt::format("unacked: {} of {} entries", broker.entries - broker.acked, broker.entries));
  }
  if (busy_errors > 0) out.push_back(fmt::format("SQLITE_BUSY escaped {} times", busy_errors));
  if (other_errors > 0) out.push_back(fmt::format("{} consumers failed", other_errors));
  if (interrupted) out.push_back("interrupted before the end");
  if (timed_out) {
    out.push_back(fmt::format("timed out after {} s", options.timeout.count()));
  }
  return out;
}

nlohmann::ordered_json SoakReportToJson(const SoakReport& r) {
  const SoakOptions& o = r.options;
  nlohmann::ordered_json j;
  j["command"] = "soak";
  if (r.supervisor_only) j["role"] = "supervisor";
  if (!r.supervisor_only) j["strategy"] = ToString(o.strategy);
  j["messages"] = o.workload.messages;
  j["duplicateRate"] = o.workload.duplicate_rate;
  j["distinctOrders"] = r.distinct_orders;
  j["duplicates"] = r.duplicates;
  j["seed"] = o.workload.seed;
  if (!o.nats_url.empty()) j["broker"] = "nats";
  if (r.supervisor_only) {
    if (r.consumers_seen >= 0) j["consumersSeen"] = r.consumers_seen;
  } else {
    j["consumers"] = o.consumers;
    j["killEveryMs"] = o.kill_every.count();
  }
  if (!r.supervisor_only) j["leaseMs"] = o.lease.count();
  if (o.postgres()) {
    j["backend"] = "postgres";
  } else {
    j["journal"] = ToString(o.settings.journal);
    j["synchronous"] = ToString(o.settings.synchronous);
  }
  if (!r.supervisor_only) {
    j["kills"] = r.kills;
    j["killsMidTransaction"] = r.kills_mid_transaction;
    j["restarts"] = r.restarts;
  }
  j["deliveries"] = r.broker.deliveries;
  j["redeliveries"] = r.broker.redeliveries;
  j["acked"] = r.broker.acked;
  j["unacked"] = r.broker.entries - r.broker.acked;
  // NATS with --role: the consumers elsewhere know what they skipped, the server does not.
  const bool skips_known = !(r.supervisor_only && !o.nats_url.empty());
  if (skips_known) {
    j["ackedProcessed"] = r.broker.acked_processed;
    j["duplicatesSkipped"] = r.broker.acked_skipped;
  }
  j["reserved"] = r.check.reserved;
  j["expectedReserved"] = r.check.expected_reserved;
  if (r.reach_unknown) {
    j["lostOrNotReached"] = r.check.lost;  // NATS: the server does not say which
  } else {
    j["lost"] = r.check.lost;
    j["notReached"] = r.check.not_reached;
  }
  j["doubled"] = r.check.doubled;
  j["doubledOrders"] = r.check.doubled_orders;
  j["busyErrors"] = r.busy_errors;
  j["otherErrors"] = r.other_errors;
  j["errors"] = r.errors;
  j["interrupted"] = r.interrupted;
  j["timedOut"] = r.timed_out;
  j["seconds"] = std::round(std::chrono::duration<double>(r.elapsed).count() * 1000.0) / 1000.0;
  j["held"] = r.held();
  j["failures"] = r.failures();
  return j;
}

std::string FormatSoakReport(const SoakReport& r) {
  const SoakOptions& o = r.options;
  std::string out =
      r.supervisor_only
          ? fmt::format(
                "soak supervisor: {} messages ({} orders + {} duplicates, seed {}), consumers "
                "started separately ({}), postgres{}\n",
                o.workload.messages, r.distinct_orders, r.duplicates, o.workload.seed,
                r.consumers_seen >= 0
                    ? fmt::format("{} leased an entry", r.consumers_seen)
                    : std::string("through one shared NATS consumer: not counted"),
                o.nats_url.empty() ? "" : ", through NATS JetStream")
          : fmt::format(
                "soak: {} messages ({} orders + {} duplicates, seed {}), strategy {}, {} consumer "
                "process{}, a kill about every {} ms, lease {} ms, {}\n",
                o.workload.messages, r.distinct_orders, r.duplicates, o.workload.seed,
                ToString(o.strategy), o.consumers, o.consumers == 1 ? "" : "es",
                o.kill_every.count(), o.lease.count(),
                (o.postgres()
                     ? std::string("postgres")
                     : fmt::format("journal {}, synchronous {}", ToString(o.settings.journal),
                                   ToString(o.settings.synchronous))) +
                    (o.nats_url.empty() ? "" : ", through NATS JetStream"));
  if (r.supervisor_only) {  // the kills, if any, were someone else's
    out += fmt::format("deliveries {}, redeliveries {}, acked {} of {}\n", r.broker.deliveries,
                       r.broker.redeliveries, r.broker.acked, r.broker.entries);
  } else {
    out += fmt::format(
        "kills {} ({} with a transaction open), restarts {}, deliveries {}, redeliveries {}, "
        "acked {} of {}\n",
        r.kills, r.kills_mid_transaction, r.restarts, r.broker.deliveries, r.broker.redeliveries,
        r.broker.acked, r.broker.entries);
  }
  const bool skips_known = !(r.supervisor_only && !o.nats_url.empty());
  out += fmt::format("{}reserved {} of {}: {} {}, doubled {}{}\n",
                     skips_known ? fmt::format("duplicates skipped {}, ", r.broker.acked_skipped)
                                 : std::string(),
                     r.check.reserved, r.check.expected_reserved,
                     r.reach_unknown ? "lost or not reached" : "lost", r.check.lost, r.check.doubled,
                     r.check.not_reached > 0
                         ? fmt::format(", not reached {}", r.check.not_reached)
                         : std::string());
  std::string errors =
      r.supervisor_only
          ? std::string("elapsed ")  // the consumers' errors are on their own terminals
          : fmt::format("{}other consumer errors {}, ",
                        o.postgres()
                            ? std::string()  // no SQLITE_BUSY on a server that locks rows
                            : fmt::format("SQLITE_BUSY escaped {}, ", r.busy_errors),
                        r.other_errors);
  out += fmt::format("{}{:.2f} s{}\n", errors, std::chrono::duration<double>(r.elapsed).count(),
                     r.interrupted ? " (interrupted)" : "");
  std::vector<std::string> failures = r.failures();
  if (failures.empty()) {
    out += "invariants held: every order applied exactly once, every entry acked\n";
  } else {
    out += fmt::format("invariants FAILED: {}\n", fmt::join(failures, "; "));
  }
  return out;
}

nlohmann::ordered_json SoakConsumerReportToJson(const SoakConsumerReport& r) {
  nlohmann::ordered_json j;
  j["command"] = "soak";
  j["role"] = "consumer";
  j["consumer"] = r.consumer;
  j["received"] = r.received;
  j["processed"] = r.processed;
  j["duplicatesSkipped"] = r.skipped;
  j["acksRefused"] = r.acks_refused;
  j["runDone"] = r.run_done;
  j["interrupted"] = r.interrupted;
  j["timedOut"] = r.timed_out;
  return j;
}

std::string FormatSoakConsumerReport(const SoakConsumerReport& r) {
  return fmt::format(
      "soak consumer {}: received {}, processed {}, duplicates skipped {}, acks refused {}; "
      "{}\n",
      r.consumer, r.received, r.processed, r.skipped, r.acks_refused,
      r.run_done ? "the supervisor ended the run"
                 : (r.interrupted ? "interrupted" : "timed out before the run ended"));
}

}  // namespace dedupsim
