#include "soak/soak_report.h"

#include <fmt/format.h>

#include <cmath>

namespace dedupsim {

nlohmann::ordered_json SoakReportToJson(const SoakReport& r) {
  const SoakOptions& o = r.options;
  nlohmann::ordered_json j;
  j["command"] = "soak";
  j["strategy"] = ToString(o.strategy);
  j["messages"] = o.workload.messages;
  j["duplicateRate"] = o.workload.duplicate_rate;
  j["distinctOrders"] = r.distinct_orders;
  j["duplicates"] = r.duplicates;
  j["seed"] = o.workload.seed;
  j["consumers"] = o.consumers;
  j["killEveryMs"] = o.kill_every.count();
  j["leaseMs"] = o.lease.count();
  if (o.postgres != nullptr) {
    j["backend"] = "postgres";
  } else {
    j["journal"] = ToString(o.settings.journal);
    j["synchronous"] = ToString(o.settings.synchronous);
  }
  j["kills"] = r.kills;
  j["killsMidTransaction"] = r.kills_mid_transaction;
  j["restarts"] = r.restarts;
  j["deliveries"] = r.broker.deliveries;
  j["redeliveries"] = r.broker.redeliveries;
  j["acked"] = r.broker.acked;
  j["unacked"] = r.broker.entries - r.broker.acked;
  j["ackedProcessed"] = r.broker.acked_processed;
  j["duplicatesSkipped"] = r.broker.acked_skipped;
  j["reserved"] = r.check.reserved;
  j["expectedReserved"] = r.check.expected_reserved;
  j["lost"] = r.check.lost;
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
  std::string out = fmt::format(
      "soak: {} messages ({} orders + {} duplicates, seed {}), strategy {}, {} consumer "
      "process{}, a kill about every {} ms, lease {} ms, {}\n",
      o.workload.messages, r.distinct_orders, r.duplicates, o.workload.seed, ToString(o.strategy),
      o.consumers, o.consumers == 1 ? "" : "es", o.kill_every.count(), o.lease.count(),
      o.postgres != nullptr
          ? std::string("postgres")
          : fmt::format("journal {}, synchronous {}", ToString(o.settings.journal),
                        ToString(o.settings.synchronous)));
  out += fmt::format(
      "kills {} ({} with a transaction open), restarts {}, deliveries {}, redeliveries {}, acked "
      "{} of {}\n",
      r.kills, r.kills_mid_transaction, r.restarts, r.broker.deliveries, r.broker.redeliveries,
      r.broker.acked, r.broker.entries);
  out += fmt::format("duplicates skipped {}, reserved {} of {}: lost {}, doubled {}\n",
                     r.broker.acked_skipped, r.check.reserved, r.check.expected_reserved,
                     r.check.lost, r.check.doubled);
  out += fmt::format("{}other consumer errors {}, {:.2f} s{}\n",
                     o.postgres != nullptr
                         ? std::string()  // no SQLITE_BUSY on a server that locks rows
                         : fmt::format("SQLITE_BUSY escaped {}, ", r.busy_errors),
                     r.other_errors, std::chrono::duration<double>(r.elapsed).count(),
                     r.interrupted ? " (interrupted)" : "");
  std::vector<std::string> failures = r.failures();
  if (failures.empty()) {
    out += "invariants held: every order applied exactly once, every entry acked\n";
  } else {
    out += fmt::format("invariants FAILED: {}\n", fmt::join(failures, "; "));
  }
  return out;
}

}  // namespace dedupsim
