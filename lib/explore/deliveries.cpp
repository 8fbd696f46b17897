#include "explore/deliveries.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

#include "explore/step_label.h"
#include "views/step_text.h"

namespace dedupsim::explore {

namespace {

bool IsWriteOp(const std::string& op) { return op == "INSERT" || op == "UPDATE" || op == "DELETE"; }

std::string CopyKey(const std::string& message, std::string_view subscriber) {
  return message + "/" + std::string(subscriber);
}

// The copy number of each delivery of the plan: copies of one message are numbered in the
// order the broker hands them out (copy k goes to instance k mod N, each instance taking
// its copies one after the other: by position in the instance's script, then instance).
// Each subscriber gets its own copies of a message.
struct CopyNumbers {
  std::vector<std::vector<int>> copy;  // [instance][position]
  std::map<std::string, int> copies;   // message and subscriber -> how many
};

CopyNumbers NumberCopies(const Plan& plan) {
  CopyNumbers n;
  std::vector<std::tuple<size_t, size_t, std::string>> order;  // position, instance, message
  n.copy.resize(plan.instances.size());
  for (size_t i = 0; i < plan.instances.size(); ++i) {
    n.copy[i].resize(plan.instances[i].deliveries.size());
    for (size_t j = 0; j < plan.instances[i].deliveries.size(); ++j) {
      const Delivery& d = plan.instances[i].deliveries[j];
      order.emplace_back(j, i, CopyKey(d.message.message_id, d.subscriber->name));
    }
  }
  std::sort(order.begin(), order.end());
  for (const auto& [j, i, message] : order) n.copy[i][j] = ++n.copies[message];
  return n;
}

// A statement's bound values, short: an id (hex digits and dashes) past 16 characters cut
// to its first 8, "…" marking the cut, as the deliveries' headers name messages; any other
// value (a timestamp, a consumer's name) whole.
std::string ShortValues(const std::string& values) {
  std::string out;
  size_t from = 0;
  while (from <= values.size()) {
    size_t comma = values.find(", ", from);
    std::string item = values.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    size_t eq = item.find('=');
    if (eq != std::string::npos) {
      std::string value = item.substr(eq + 1);
      const bool id = value.find_first_not_of("0123456789abcdefABCDEF-") == std::string::npos;
      if (id && value.size() > 16) item = item.substr(0, eq + 1) + value.substr(0, 8) + "\u2026";
    }
    out += (out.empty() ? "" : ", ") + item;
    if (comma == std::string::npos) break;
    from = comma + 2;
  }
  return out;
}

// What one step did, from its event: "SELECT Inbox: no row", "COMMIT", "BeforeSend".
std::string Did(const TraceEvent& e, bool with_values) {
  if (e.kind == "sql") {
    std::string label = StepLabel(e.detail);
    if (with_values && !e.values.empty()) label += " (" + ShortValues(e.values) + ")";
    std::string result = DescribeResult(e, false);  // "no row" for a SELECT that found none
    if (result == "ok") return label;
    if (result.starts_with("ok: ")) result = result.substr(4);
    return label + ": " + result;
  }
  if (e.kind == "send") return e.detail + (e.result.empty() ? "" : ": " + e.result);
  if (e.kind == "publish") return "publish " + e.detail;
  if (e.kind == "crash") return "crash at " + e.detail;
  if (e.kind == "wait") {
    size_t colon = e.detail.find(':');
    return (colon == std::string::npos ? e.detail : e.detail.substr(0, colon)) +
           ": the database is locked, waits";
  }
  return e.detail;  // a hook: its name
}

// One connection's transaction: whether one is open, and the writes it holds.
struct OpenTransaction {
  bool open = false;
  std::vector<std::string> writes;
};

}  // namespace

std::string_view ToString(DeliveryEnd end) {
  switch (end) {
    case DeliveryEnd::kAcked:
      return "acked";
    case DeliveryEnd::kSkipped:
      return "skipped";
    case DeliveryEnd::kReconcile:
      return "reconcile";
    case DeliveryEnd::kCrashed:
      return "crashed";
    case DeliveryEnd::kRefused:
      return "refused";
    case DeliveryEnd::kStopped:
      return "stopped";
  }
  return "?";
}

std::vector<DeliveryAttempt> DeliveriesOf(const Plan& plan, const ScheduleResult& run,
                                          const std::vector<TraceEvent>& events,
                                          bool with_values) {
  std::vector<DeliveryAttempt> out;
  CopyNumbers copies = NumberCopies(plan);
  std::map<std::string, size_t> current;      // instance -> its attempt under way (index in out)
  std::map<std::string, int> position;        // instance -> its delivery (position in script)
  std::map<std::string, OpenTransaction> tx;  // instance/target -> its open transaction
  bool deadlock = false;

  auto end_transactions = [&](const std::string& instance, DeliveryAttempt& d) {
    for (auto& [key, t] : tx) {
      if (!key.starts_with(instance + "/")) continue;
      d.undone.insert(d.undone.end(), t.writes.begin(), t.writes.end());
      t = OpenTransaction{};
    }
  };

  for (const TraceEvent& e : events) {
    if (e.kind == "deadlock") deadlock = true;
    if (e.kind == "deliver") {
      size_t instance = 0;
      while (instance < plan.instances.size() &&
             InstanceName(static_cast<int>(instance)) != e.instance)
        ++instance;
      if (instance == plan.instances.size()) {
        throw std::logic_error("a delivery to an instance the plan does not have: " + e.instance);
      }
      int& pos = position.try_emplace(e.instance, -1).first->second;
      if (e.delivery <= 1) ++pos;  // a new copy; a higher number redelivers the same one
      const auto& script = plan.instances[instance].deliveries;
      if (pos < 0 || static_cast<size_t>(pos) >= script.size()) {
        throw std::logic_error("more deliveries in the trace than in the plan for " + e.instance);
      }
      const Delivery& planned = script[static_cast<size_t>(pos)];
      if (planned.message.message_id != e.key) {
        throw std::logic_error("the trace delivers another message than the plan to " + e.instance);
      }
      DeliveryAttempt d;
      d.instance = e.instance;
      d.subscriber = std::string(planned.subscriber->name);
      d.message = e.key;
      d.copy = copies.copy[instance][static_cast<size_t>(pos)];
      d.copies = copies.copies[CopyKey(e.key, planned.subscriber->name)];
      d.attempt = e.delivery;
      current[e.instance] = out.size();
      out.push_back(std::move(d));
      continue;
    }
    auto it = current.find(e.instance);
    if (it == current.end()) continue;  // set-up, or the scheduler's own notes
    DeliveryAttempt& d = out[it->second];
    const std::string tx_key = e.instance + "/" + (e.target.empty() ? "database" : e.target);
    if (e.kind == "sql") {
      d.did.push_back(Did(e, with_values));
      OpenTransaction& t = tx[tx_key];
      const bool ok = e.result == "ok";
      if (e.op == "BEGIN" && ok) {
        t.open = true;
      } else if (e.op == "COMMIT" && ok) {
        d.committed.insert(d.committed.end(), t.writes.begin(), t.writes.end());
        t = OpenTransaction{};
      } else if (e.op == "ROLLBACK") {
        d.undone.insert(d.undone.end(), t.writes.begin(), t.writes.end());
        t = OpenTransaction{};
      } else if (IsWriteOp(e.op) && ok) {  // "ok: no row changed" wrote nothing
        // A write to the second file (the cache, the provider's records) says so.
        std::string write = StepLabel(e.detail);
        if (!e.target.empty() && e.target != "database") write += " (" + e.target + ")";
        (t.open ? t.writes : d.committed).push_back(write);
      }
    } else if (e.kind == "publish") {
      d.did.push_back(Did(e, with_values));
      d.committed.push_back("publish " + e.detail + " (to the broker, at once)");
    } else if (e.kind == "hook" || e.kind == "send" || e.kind == "wait") {
      d.did.push_back(Did(e, with_values));
    } else if (e.kind == "crash") {
      d.did.push_back(Did(e, with_values));
      d.end = DeliveryEnd::kCrashed;
      d.ended = fmt::format("crashed at {}: not acked, so the broker delivers it again", e.detail);
      end_transactions(e.instance, d);  // the connection closed with its transaction open
    } else if (e.kind == "ack") {
      d.ack_lost = e.result == "lost";
      const char* lost = d.ack_lost ? ", but the ack was lost" : "";
      if (e.detail == "skipped") {
        d.end = DeliveryEnd::kSkipped;
        d.ended = fmt::format("skipped as a duplicate, acked{}", lost);
      } else if (e.detail == "needs reconciliation") {
        d.end = DeliveryEnd::kReconcile;
        d.ended = fmt::format("flagged for reconciliation, acked{}", lost);
      } else {
        d.end = DeliveryEnd::kAcked;
        d.ended = fmt::format("acked ({}){}", e.detail, lost);
      }
    } else if (e.kind == "error") {
      d.end = DeliveryEnd::kRefused;
      // The consumer's own throw, or the database's refusal; and whether the broker then
      // gave up on the message.
      const bool thrown = e.result.starts_with("thrown");
      const bool given_up = e.result.ends_with("given up");
      d.ended = thrown ? fmt::format("threw ({}): not acked", e.detail)
                       : fmt::format("refused by the database ({}): not acked", e.detail);
      d.ended += given_up ? ", and the broker gave up on it (dead-lettered): never acked"
                          : ", so the broker delivers it again";
      end_transactions(e.instance, d);
    }
  }
  for (DeliveryAttempt& d : out) {
    if (d.ended.empty()) {
      d.end = DeliveryEnd::kStopped;
      d.ended = deadlock ? "stopped: every instance waited for another's lock (deadlock)"
                         : "stopped before it ended";
    }
  }
  for (size_t i = 0; i < run.attempts.size(); ++i) {
    int64_t a = run.attempts[i];
    if (a < 1 || static_cast<size_t>(a) > out.size()) {
      throw std::logic_error(
          fmt::format("step {} belongs to delivery attempt {}, and the trace shows {} attempts",
                      i + 1, a, out.size()));
    }
    DeliveryAttempt& d = out[static_cast<size_t>(a - 1)];
    if (run.steps[i].substr(0, d.instance.size()) != d.instance) {
      throw std::logic_error(
          fmt::format("step {} ({}) is not {}'s", i + 1, run.steps[i], d.instance));
    }
    d.steps.push_back(i + 1);
  }
  return out;
}

std::string StepRanges(const std::vector<size_t>& steps) {
  std::string out;
  for (size_t i = 0; i < steps.size();) {
    size_t j = i;
    while (j + 1 < steps.size() && steps[j + 1] == steps[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? std::to_string(steps[i]) : fmt::format("{}-{}", steps[i], steps[j]);
    i = j + 1;
  }
  return out;
}

std::string FormatDeliveries(const std::vector<DeliveryAttempt>& deliveries,
                             std::string_view indent) {
  std::string out =
      fmt::format("{} deliver{}:\n", deliveries.size(), deliveries.size() == 1 ? "y" : "ies");
  bool several = false;
  for (const DeliveryAttempt& d : deliveries)
    several = several || d.subscriber != deliveries[0].subscriber;
  for (size_t i = 0; i < deliveries.size(); ++i) {
    const DeliveryAttempt& d = deliveries[i];
    std::string copy = d.copies > 1 ? fmt::format("copy {} of ", d.copy) : "";
    std::string steps = d.steps.empty()       ? "no step"
                        : d.steps.size() == 1 ? "step " + StepRanges(d.steps)
                                              : "steps " + StepRanges(d.steps);
    // The consumer's name only where two consumers share the run (second-subscriber).
    std::string to = several ? " to " + d.subscriber : "";
    out += fmt::format("{}{:>3}  {}  {}message {}{}, attempt {}, {}:\n", indent, i + 1, d.instance,
                       copy, d.message.substr(0, 8), to, d.attempt, steps);
    std::string pad = std::string(indent) + "        ";
    out += fmt::format("{}did: {}\n", pad,
                       d.did.empty() ? "nothing" : fmt::format("{}", fmt::join(d.did, ", ")));
    out += fmt::format(
        "{}committed: {}\n", pad,
        d.committed.empty() ? "nothing" : fmt::format("{}", fmt::join(d.committed, ", ")));
    if (!d.undone.empty()) {
      out += fmt::format("{}rolled back: {}\n", pad, fmt::join(d.undone, ", "));
    }
    out += fmt::format("{}ended: {}\n", pad, d.ended);
  }
  return out;
}

nlohmann::ordered_json DeliveriesToJson(const std::vector<DeliveryAttempt>& deliveries) {
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const DeliveryAttempt& d : deliveries) {
    all.push_back({{"instance", d.instance},
                   {"subscriber", d.subscriber},
                   {"message", d.message},
                   {"copy", d.copy},
                   {"copies", d.copies},
                   {"attempt", d.attempt},
                   {"steps", d.steps},
                   {"did", d.did},
                   {"committed", d.committed},
                   {"rolledBack", d.undone},
                   {"end", ToString(d.end)},
                   {"ended", d.ended},
                   {"ackLost", d.ack_lost}});
  }
  return all;
}

}  // namespace dedupsim::explore
