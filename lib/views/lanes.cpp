#include "views/lanes.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "views/step_text.h"

namespace dedupsim {

namespace {

using LaneId = std::pair<std::string, int>;

bool ResultOk(const std::string& result) {
  return result.empty() || result == "ok" || result == "row";
}

struct LaneBuilder {
  Lane lane;
  std::optional<Span> open;       // the transaction in progress
  std::optional<size_t> waiting;  // index into lane.waits of a wait not yet ended
};

void AddStatement(LaneBuilder& b, const TraceEvent& e) {
  const SqlControl control = ClassifySql(e.detail);
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
    wait->statement = AbbreviateSql(e.detail);
    wait->result = e.result;
    b.waiting.reset();
  }
  if (!ResultOk(e.result)) {
    b.lane.marks.push_back(
        {Mark::Kind::kFailure, e.at_us, fmt::format("{}: {}", AbbreviateSql(e.detail), e.result)});
  }
  const SpanStep step{e.at_us, AbbreviateSql(e.detail), e.result};
  if (control == SqlControl::kBegin) {
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
    if (control == SqlControl::kCommit && ResultOk(e.result)) {
      b.open->end = Span::End::kCommit;
    } else if (control == SqlControl::kRollback) {
      b.open->end = Span::End::kRollback;
    } else {
      return;  // still open (a failed COMMIT leaves it open too)
    }
    b.lane.spans.push_back(std::move(*b.open));
    b.open.reset();
    return;
  }
  if (control != SqlControl::kNone) return;  // COMMIT or ROLLBACK with nothing open
  Span span;
  span.kind = Span::Kind::kAutocommit;
  span.end = Span::End::kStatement;
  span.start_us = span.end_us = e.at_us;
  span.steps.push_back(step);
  b.lane.spans.push_back(std::move(span));
}

}  // namespace

std::vector<int> DeliveryStarts(const std::vector<TraceEvent>& events) {
  std::vector<int> starts(events.size(), 0);
  std::set<std::string> seen;
  int next = 1;
  for (size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    if (e.instance.empty()) continue;
    if (e.kind == "open" || !seen.count(e.instance)) starts[i] = next++;
    seen.insert(e.instance);
  }
  return starts;
}

std::vector<Lane> BuildLanes(const std::vector<TraceEvent>& events) {
  std::vector<LaneId> order;
  std::map<LaneId, LaneBuilder> builders;
  const std::vector<int> deliveries = DeliveryStarts(events);
  // Died steps, by instance, to end a dead process's open transaction.
  std::vector<const TraceEvent*> deaths;

  for (size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    LaneId id{e.instance, e.pid};
    auto [it, inserted] = builders.try_emplace(id);
    LaneBuilder& b = it->second;
    if (inserted) {
      order.push_back(id);
      b.lane.instance = e.instance;
      b.lane.pid = e.pid;
      b.lane.first_us = e.at_us;
    }
    b.lane.last_us = std::max(b.lane.last_us, e.at_us);
    if (deliveries[i] > 0) {
      b.lane.marks.push_back(
          {Mark::Kind::kDelivery, e.at_us, fmt::format("delivery {}", deliveries[i])});
    }
    if (e.kind == "sql") {
      AddStatement(b, e);
    } else if (e.kind == "wait") {
      b.lane.waits.push_back(LockWait{e.at_us, e.at_us, 0, "", ""});
      b.waiting = b.lane.waits.size() - 1;
    } else if (e.kind == "hook") {
      b.lane.marks.push_back({Mark::Kind::kHook, e.at_us, e.detail});
    } else if (e.kind == "crash") {
      std::string how =
          e.result.empty() || e.result == "crash" ? "" : fmt::format(" ({})", e.result);
      b.lane.marks.push_back(
          {Mark::Kind::kCrash, e.at_us, fmt::format("crash at {}{}", e.detail, how)});
      if (b.open) b.open->crashed = true;
    } else if (e.kind == "send") {
      b.lane.marks.push_back(
          {Mark::Kind::kSend, e.at_us, fmt::format("{}: {}", e.detail, e.result)});
    } else if (e.kind == "died") {
      b.lane.marks.push_back({Mark::Kind::kDied, e.at_us, e.result});
      deaths.push_back(&e);
    } else if (e.kind == "recover") {
      b.lane.marks.push_back({Mark::Kind::kRecover, e.at_us, "recovery: " + e.detail});
    } else if (e.kind != "open") {
      b.lane.marks.push_back({Mark::Kind::kOther, e.at_us, fmt::format("{} {}", e.kind, e.detail)});
    }
  }

  std::vector<Lane> lanes;
  for (const LaneId& id : order) {
    LaneBuilder& b = builders[id];
    if (b.waiting) {
      LockWait& wait = b.lane.waits[*b.waiting];
      wait.end_us = b.lane.last_us;  // never got the lock while recorded
    }
    if (b.open) {
      Span span = std::move(*b.open);
      // A transaction left open in a process that died ends where its death was seen.
      const TraceEvent* death = nullptr;
      for (const TraceEvent* d : deaths) {
        if (d->instance == id.first && d->pid != id.second && d->at_us >= b.lane.last_us) {
          death = d;
          break;
        }
      }
      if (death != nullptr) {
        span.end = Span::End::kDied;
        span.end_us = death->at_us;
        span.end_detail = death->result;
        b.lane.last_us = std::max(b.lane.last_us, death->at_us);
      } else {
        span.end = Span::End::kOpen;
        span.end_us = b.lane.last_us;
      }
      b.lane.spans.push_back(std::move(span));
    }
    lanes.push_back(std::move(b.lane));
  }
  return lanes;
}

std::vector<TraceEvent> CausalOrder(std::vector<TraceEvent> events) {
  constexpr int64_t kWindowUs = 2000;
  size_t i = 0;
  while (i < events.size()) {
    const TraceEvent& e = events[i];
    std::optional<size_t> last;
    if (e.kind == "sql" && e.busy_calls > 0) {
      for (size_t j = i + 1; j < events.size() && events[j].at_us - e.at_us <= kWindowUs; ++j) {
        const TraceEvent& other = events[j];
        if (other.kind != "sql" || (other.instance == e.instance && other.pid == e.pid)) continue;
        SqlControl control = ClassifySql(other.detail);
        if (control == SqlControl::kCommit || control == SqlControl::kRollback) last = j;
      }
    }
    if (!last) {
      ++i;
      continue;
    }
    // Move it just after that COMMIT or ROLLBACK; the event now at i is looked at next.
    TraceEvent moved = std::move(events[i]);
    events.erase(events.begin() + static_cast<std::ptrdiff_t>(i));
    events.insert(events.begin() + static_cast<std::ptrdiff_t>(*last), std::move(moved));
  }
  return events;
}

}  // namespace dedupsim
