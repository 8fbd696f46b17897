#include "views/lanes.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace dedupsim {

namespace {

bool ResultOk(const std::string& result) {
  return result.empty() || result.rfind("ok", 0) == 0 || result == "row";
}

struct LaneBuilder {
  Lane lane;
  std::optional<Span> open;       // the transaction in progress
  std::optional<size_t> waiting;  // index into lane.waits of a wait not yet ended
};

void AddStatement(LaneBuilder& b, const TraceEvent& e) {
  const std::string label = StepLabel(e);
  if (e.busy_calls > 0 || b.waiting) {
    LockWait* wait = nullptr;
    if (b.waiting) {
      wait = &b.lane.waits[*b.waiting];
    } else {
      b.lane.waits.push_back(LockWait{e.at_us - e.waited_us, e.at_us, 0, "", ""});
      wait = &b.lane.waits.back();
    }
    wait->end_us = e.at_us;
    wait->waited_us = e.waited_us;
    wait->statement = label;
    wait->result = e.result;
    b.waiting.reset();
  }
  if (!ResultOk(e.result)) {
    b.lane.marks.push_back({Mark::Kind::kFailure, e.at_us, fmt::format("{}: {}", label, e.result)});
  }
  const bool control = IsBegin(e) || IsCommit(e) || IsRollback(e);
  const SpanStep step{e.at_us, label, e.result, control};
  if (IsBegin(e)) {
    if (!ResultOk(e.result)) return;  // BEGIN failed: no transaction
    Span span;
    span.kind = Span::Kind::kTransaction;
    span.end = Span::End::kOpen;
    span.start_us = span.end_us = e.at_us;
    span.steps.push_back(step);
    b.open = span;
    return;
  }
  if (b.open) {
    b.open->end_us = e.at_us;
    b.open->steps.push_back(step);
    if (IsCommit(e) && ResultOk(e.result)) {
      b.open->end = Span::End::kCommit;
    } else if (IsRollback(e)) {
      b.open->end = Span::End::kRollback;
    } else {
      return;  // still open (a failed COMMIT leaves it open too)
    }
    b.lane.spans.push_back(std::move(*b.open));
    b.open.reset();
    return;
  }
  if (control) return;  // COMMIT or ROLLBACK with nothing open
  Span span;
  span.kind = Span::Kind::kAutocommit;
  span.end = Span::End::kStatement;
  span.start_us = span.end_us = e.at_us;
  span.steps.push_back(step);
  b.lane.spans.push_back(std::move(span));
}

std::string FixedTitle(const std::string& key) {
  if (key == "producer") return "Producer";
  if (key == "operator") return "Operator";
  if (key == "broker") return "Broker";
  if (key == "database") return "Database";
  if (key == "probe") return "scenario check";
  if (key == "setup") return "set-up";
  return "";
}

}  // namespace

std::string LaneKey(const TraceEvent& e) {
  const std::string actor = ActorOf(e);
  if (actor == kActorScenario) return "";
  if (actor == kActorBroker) {
    if (e.op == "send" || e.op == "drop") return "producer";
    if (e.op == "replay") return "operator";
    return "broker";
  }
  if (actor == kActorDatabase) return "database";
  if (actor == kActorProbe) return "probe";
  if (actor == kActorSetup) return "setup";
  return fmt::format("{}/{}/{}", actor, e.instance, e.pid);
}

std::string BrokerStepText(const TraceEvent& e, ShortIds& ids, bool* bad) {
  const std::string m = ids.Name(e.key);
  *bad = false;
  if (e.op == "send") return fmt::format("send {}: accepted", m);
  if (e.op == "drop") {
    *bad = false;  // the broker doing its job
    return fmt::format("send {}: dropped as a duplicate", m);
  }
  if (e.op == "deliver") return fmt::format("deliver {} (delivery {})", m, e.delivery);
  if (e.op == "ack") return fmt::format("ack {}", m);
  const bool dead = e.result.rfind("dead-lettered", 0) == 0;
  if (e.op == "abandon") {
    *bad = dead;
    return dead ? fmt::format("nack {}: dead-lettered (max deliveries)", m)
                : fmt::format("nack {}: back in the queue", m);
  }
  if (e.op == "ack-lost") {
    *bad = true;
    return dead ? fmt::format("ack lost for {}: dead-lettered (max deliveries)", m)
                : fmt::format("ack lost for {}: back in the queue", m);
  }
  if (e.op == "dead-letter") {
    *bad = true;
    return fmt::format("dead-lettered {}: {}", m, e.result);
  }
  if (e.op == "replay") return fmt::format("replay {} from the dead-letter queue", m);
  return ids.Shorten(fmt::format("{}: {}", e.detail, e.result));
}

std::vector<Lane> BuildLanes(const std::vector<TraceEvent>& events, ShortIds& ids) {
  std::vector<std::string> order;
  std::map<std::string, LaneBuilder> builders;
  std::set<std::string> died_instances;  // consumer instances whose process died

  for (const TraceEvent& e : events) {
    const std::string key = LaneKey(e);
    if (key.empty()) continue;
    auto [it, inserted] = builders.try_emplace(key);
    LaneBuilder& b = it->second;
    if (inserted) {
      order.push_back(key);
      b.lane.key = key;
      b.lane.actor = ActorOf(e);
      b.lane.instance = e.instance;
      b.lane.pid = e.pid;
      b.lane.first_us = e.at_us;
      b.lane.secondary = b.lane.actor == kActorProbe;
      b.lane.title = FixedTitle(key);
      if (b.lane.title.empty()) {
        b.lane.title = ActorTitle(e);
        if (died_instances.count(e.instance)) b.lane.title += " (restarted)";
      }
    }
    b.lane.last_us = std::max(b.lane.last_us, e.at_us);
    if (e.kind == "open" && e.delivery > 0) {
      b.lane.marks.push_back({Mark::Kind::kDelivery, e.at_us,
                              fmt::format("{} delivery {}", ids.Name(e.key), e.delivery)});
    }
    if (e.kind == "sql") {
      AddStatement(b, e);
    } else if (e.kind == "wait") {
      b.lane.waits.push_back(LockWait{e.at_us, e.at_us, 0, "", ""});
      b.waiting = b.lane.waits.size() - 1;
    } else if (e.kind == "hook") {
      b.lane.marks.push_back({Mark::Kind::kHook, e.at_us, "hook " + e.detail});
    } else if (e.kind == "crash") {
      std::string how =
          e.result.empty() || e.result == "crash" ? "" : fmt::format(" ({})", e.result);
      b.lane.marks.push_back(
          {Mark::Kind::kCrash, e.at_us, fmt::format("crash at {}{}", e.detail, how)});
      if (b.open) b.open->crashed = true;
    } else if (e.kind == "send") {
      b.lane.marks.push_back(
          {Mark::Kind::kSend, e.at_us, fmt::format("email sent ({}: {})", e.detail, e.result)});
    } else if (e.kind == "died") {
      b.lane.marks.push_back({Mark::Kind::kDied, e.at_us, "died: " + e.result});
      died_instances.insert(e.instance);
      if (b.open) {
        Span span = std::move(*b.open);
        b.open.reset();
        span.end = Span::End::kDied;
        span.end_us = e.at_us;
        span.end_detail = e.result;
        b.lane.spans.push_back(std::move(span));
      }
    } else if (e.kind == "recover") {
      b.lane.marks.push_back({Mark::Kind::kRecover, e.at_us, "recovery: " + ids.Shorten(e.detail)});
    } else if (e.kind == "outcome") {
      const bool bad = e.detail == "NeedsReconciliation" || e.detail == "ContentMismatch";
      b.lane.marks.push_back({Mark::Kind::kOutcome, e.at_us, e.detail, bad});
    } else if (e.kind == "broker") {
      bool bad = false;
      std::string text = BrokerStepText(e, ids, &bad);
      b.lane.marks.push_back({Mark::Kind::kBroker, e.at_us, text, bad});
    } else if (e.kind == "lock") {
      // Where a write lock was taken and released: the transaction's span already shows
      // it; the times are in the trace and the JSON.
    } else if (e.kind != "open") {
      b.lane.marks.push_back({Mark::Kind::kOther, e.at_us,
                              ids.Shorten(fmt::format("{} {}: {}", e.kind, e.detail, e.result))});
    }
  }

  std::vector<Lane> lanes;
  for (const std::string& key : order) {
    LaneBuilder& b = builders[key];
    if (b.waiting) {
      LockWait& wait = b.lane.waits[*b.waiting];
      wait.end_us = b.lane.last_us;  // never got the lock while recorded
    }
    if (b.open) {
      Span span = std::move(*b.open);
      span.end = Span::End::kOpen;
      span.end_us = b.lane.last_us;
      b.lane.spans.push_back(std::move(span));
    }
    lanes.push_back(std::move(b.lane));
  }
  return lanes;
}

std::vector<TraceEvent> CausalOrder(std::vector<TraceEvent> events) {
  constexpr int64_t kWindowUs = 2000;
  auto same_lane = [](const TraceEvent& a, const TraceEvent& b) {
    return a.instance == b.instance && a.pid == b.pid;
  };
  for (size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    if (e.kind != "sql" || e.busy_calls == 0) continue;
    // The first COMMIT or ROLLBACK of another instance stamped just after the waiting
    // statement; moved only if its own lane has no step in between (its order is kept).
    std::optional<size_t> end;
    for (size_t j = i + 1; j < events.size() && events[j].at_us - e.at_us <= kWindowUs; ++j) {
      const TraceEvent& other = events[j];
      if (other.kind != "sql" || same_lane(other, e) || !(IsCommit(other) || IsRollback(other))) {
        continue;
      }
      bool its_lane_between = false;
      for (size_t k = i + 1; k < j && !its_lane_between; ++k) {
        its_lane_between = same_lane(events[k], other);
      }
      if (!its_lane_between) end = j;
      break;
    }
    if (!end) continue;
    // Just before the waiting statement, and before the lock take of its step if noted.
    size_t to = i;
    while (to > 0 && same_lane(events[to - 1], e) && events[to - 1].kind == "lock") --to;
    TraceEvent moved = std::move(events[*end]);
    events.erase(events.begin() + static_cast<std::ptrdiff_t>(*end));
    events.insert(events.begin() + static_cast<std::ptrdiff_t>(to), std::move(moved));
    ++i;  // the waiting statement, now one further on, is done
  }
  return events;
}

}  // namespace dedupsim
