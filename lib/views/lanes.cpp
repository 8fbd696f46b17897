#include "views/lanes.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace dedupsim {

namespace {

struct LaneBuilder {
  Lane lane;
  std::map<std::string, LockHeld> holding;  // by store: write-lock holds not yet released
  std::optional<Span> open;       // the transaction in progress
  int open_backend = 0;           // its connection's server backend (0: not known)
  std::optional<size_t> waiting;  // index into lane.waits of a wait not yet ended

  // Whether `e` runs inside the open transaction (on its connection): a statement that does
  // not commits by itself.
  bool InOpenTransaction(const TraceEvent& e) const {
    return open && OnConnectionOf(open_backend, e);
  }
};

bool Waited(const TraceEvent& e) { return e.busy_calls > 0 || (!e.waited_on.empty() && e.waited_us > 0); }

void AddStatement(LaneBuilder& b, const TraceEvent& e, ShortIds& ids, const WordOptions& options) {
  const std::string label = StepLabel(e);
  const StepWords words = DescribeStep(e, ids, options);
  if (Waited(e) || b.waiting) {
    LockWait* wait = nullptr;
    if (b.waiting) {
      wait = &b.lane.waits[*b.waiting];
    } else {
      b.lane.waits.push_back(LockWait{e.at_us - e.waited_us, e.at_us, 0, "", "", ""});
      wait = &b.lane.waits.back();
    }
    wait->end_us = e.at_us;
    wait->waited_us = e.waited_us;
    wait->statement = label;
    wait->result = words.result;
    if (!e.waited_on.empty()) wait->target = WaitTarget(e, ids, options);
    b.waiting.reset();
  }
  if (words.failed) {
    Mark m;
    m.kind = Mark::Kind::kFailure;
    m.at_us = e.at_us;
    m.text = words.Text();
    m.failed = true;
    b.lane.marks.push_back(std::move(m));
  }
  const bool control = IsBegin(e) || IsCommit(e) || IsRollback(e);
  const SpanStep step{e.at_us, label, words.result, control, words.failed};
  if (IsBegin(e)) {
    if (words.failed) return;  // BEGIN failed: no transaction
    Span span;
    span.kind = Span::Kind::kTransaction;
    span.end = Span::End::kOpen;
    span.start_us = span.end_us = e.at_us;
    span.steps.push_back(step);
    b.open = span;
    b.open_backend = e.backend;
    return;
  }
  if (b.InOpenTransaction(e)) {
    b.open->end_us = e.at_us;
    b.open->steps.push_back(step);
    if (IsCommit(e) && !words.failed) {
      b.open->end = Span::End::kCommit;
    } else if (IsRollback(e) || IsCommit(e)) {
      // A ROLLBACK, or a COMMIT the database answered with an error (PostgreSQL ends an
      // aborted transaction that way: it rolled back).
      b.open->end = Span::End::kRollback;
    } else {
      return;  // still open
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

std::string FixedKey(const std::string& actor) {
  if (actor == kActorProducer) return "producer";
  if (actor == kActorDatabase) return "database";
  if (actor == kActorProbe) return "probe";
  if (actor == kActorSetup) return "setup";
  if (actor == kActorDispatcher) return "dispatcher";
  if (actor == kActorEmailProvider) return "email provider";
  if (actor == kActorOperator) return "operator";
  return "";
}

}  // namespace

std::string LaneKey(const TraceEvent& e) {
  const std::string actor = ActorOf(e);
  if (actor == kActorScenario || e.kind == "reset") return "";
  if (actor == kActorBroker) return e.op == "replay" ? "operator" : "broker";
  if (std::string fixed = FixedKey(actor); !fixed.empty()) return fixed;
  return fmt::format("{}/{}/{}", actor, e.instance, e.pid);
}

bool IsSettle(const TraceEvent& e) {
  return e.kind == "broker" && (e.op == "ack" || e.op == "abandon" || e.op == "ack-lost" ||
                                e.op == "dead-letter");
}

std::vector<std::string> StepLaneKeys(const std::vector<TraceEvent>& events) {
  std::vector<std::string> keys;
  keys.reserve(events.size());
  // (key, delivery) -> the lane and process that opened it
  std::map<std::pair<std::string, int>, std::pair<std::string, int>> received_by;
  for (const TraceEvent& e : events) {
    std::string key = LaneKey(e);
    if (e.kind == "open" && e.delivery > 0) received_by[{e.key, e.delivery}] = {key, e.pid};
    if (IsSettle(e)) {
      if (auto it = received_by.find({e.key, e.delivery});
          it != received_by.end() && it->second.second == e.pid) {
        key = it->second.first;
      }
    }
    keys.push_back(std::move(key));
  }
  return keys;
}

std::map<size_t, size_t> ProviderCallsAsked(const std::vector<TraceEvent>& events) {
  std::map<size_t, size_t> asked_at;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].kind != "send" && events[i].kind != "reconcile") continue;
    size_t first = i;
    while (first > 0 && LaneKey(events[first - 1]) == "email provider" &&
           events[first - 1].pid == events[i].pid && !asked_at.count(first - 1)) {
      --first;
    }
    if (first < i) asked_at[first] = i;
  }
  return asked_at;
}

StepWords WordsOnLane(const TraceEvent& e, StepWords words, const std::string& lane) {
  if (lane != "broker" || !IsSettle(e) || e.op == "ack-lost") return words;
  const char* kind = e.op == "ack" ? "an ack" : e.op == "abandon" ? "a nack" : "a dead-letter request";
  const std::string about = words.what.substr(words.what.find(' ') + 1);
  // A settle that got no reply (RabbitMQ's ack, a nak) was sent, and no one saw it arrive.
  if (e.result.rfind("not sent", 0) == 0) {
    words.what = fmt::format("{} for {} not sent", kind, about);
    words.result = e.result.substr(std::min(e.result.size(), std::string("not sent: ").size()));
  } else if (e.result.rfind("sent", 0) == 0) {
    words.what = fmt::format("{} for {} sent", kind, about);
    words.result = "no reply";
  } else {
    words.what = fmt::format("{} for {} arrives", kind, about);
  }
  return words;
}

LockNotes PlaceLockNotes(const std::vector<TraceEvent>& events) {
  LockNotes notes;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].kind != "lock") continue;
    const std::string key = LaneKey(events[i]);
    size_t j = i + 1;
    while (j < events.size() && (LaneKey(events[j]) != key || events[j].kind == "lock")) ++j;
    if (j < events.size() && events[j].kind == "sql" && !notes.with_statement.count(j)) {
      notes.with_statement[j] = events[i].detail;
      notes.statement_of[i] = j;
    } else {
      notes.alone.insert(i);
    }
  }
  return notes;
}

std::string WithLockNote(const std::string& result, const LockNotes& notes, size_t statement) {
  const auto note = notes.with_statement.find(statement);
  if (note == notes.with_statement.end()) return result;
  return result.empty() ? note->second : result + ", " + note->second;
}

std::vector<bool> AutocommitWrites(const std::vector<TraceEvent>& events) {
  std::vector<bool> out(events.size(), false);
  std::map<std::string, int> open;  // lane/store -> the backend of its open transaction
  for (size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    const std::string lane = LaneKey(e);
    if (e.kind == "died") {
      for (auto it = open.begin(); it != open.end();) {
        it = it->first.rfind(lane + "/", 0) == 0 ? open.erase(it) : std::next(it);
      }
    }
    if (e.kind != "sql") continue;
    const std::string key = lane + "/" + e.target;
    const auto it = open.find(key);
    const bool in_open = it != open.end() && OnConnectionOf(it->second, e);
    const bool ok = e.error.empty();
    if (IsBegin(e)) {
      if (ok) open[key] = e.backend;
    } else if (IsCommit(e) || IsRollback(e)) {
      if (in_open) open.erase(it);  // a COMMIT the database refused ended it too
    } else {
      out[i] = !in_open && ok && IsWrite(e);
    }
  }
  return out;
}

std::vector<Lane> BuildLanes(const std::vector<TraceEvent>& events, ShortIds& ids,
                             const WordOptions& options) {
  std::vector<std::string> order;
  std::map<std::string, LaneBuilder> builders;
  const std::vector<std::string> keys = StepLaneKeys(events);
  const LockNotes lock_notes = PlaceLockNotes(events);
  const std::map<size_t, size_t> asked_at = ProviderCallsAsked(events);
  const std::vector<bool> autocommits = AutocommitWrites(events);
  // The lane of lane_key, begun by event `by` (at at_us) where it has no step yet.
  auto lane_of = [&](const std::string& lane_key, const TraceEvent& by,
                     int64_t at_us) -> LaneBuilder& {
    auto [it, inserted] = builders.try_emplace(lane_key);
    LaneBuilder& b = it->second;
    if (inserted) {
      order.push_back(lane_key);
      b.lane.key = lane_key;
      b.lane.actor = ActorOf(by);
      b.lane.instance = by.instance;
      b.lane.pid = by.pid;
      b.lane.first_us = at_us;
      b.lane.secondary = b.lane.actor == kActorProbe;
      b.lane.title = ActorName(by);
      if (b.lane.actor == kActorConsumer) {
        b.lane.sub = options.pids ? fmt::format("pid {}", by.pid) : ids.Process(by.pid);
      } else if (b.lane.secondary) {
        b.lane.sub = "not a consumer step";
      }
    }
    b.lane.last_us = std::max(b.lane.last_us, at_us);
    return b;
  };
  for (size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    const std::string& key = keys[i];
    if (key.empty()) continue;
    // A call to the email provider was asked by now (the provider's first step for it): said
    // on the caller's lane here (begun here where the call is its first step: the operator's
    // Find), its answer at the call's own step.
    if (auto call = asked_at.find(i); call != asked_at.end()) {
      const TraceEvent& c = events[call->second];
      LaneStep asked;
      asked.at_us = e.at_us;
      asked.event = i;
      asked.kind = "request";
      asked.text = "asks the email provider: " + DescribeStep(c, ids, options).what;
      lane_of(keys[call->second], c, e.at_us).lane.steps.push_back(std::move(asked));
    }
    LaneBuilder& b = lane_of(key, e, e.at_us);
    const StepWords words = WordsOnLane(e, DescribeStep(e, ids, options), key);
    if ((e.kind != "lock" || lock_notes.alone.count(i)) && !(e.kind == "open" && e.delivery == 0)) {
      LaneStep step;
      step.at_us = e.at_us;
      step.event = i;
      step.kind = e.kind;
      step.tone = words.tone;
      step.failed = words.failed;
      if (e.kind == "open") {
        step.text = ids.DeliveryName(e);
        step.delivery = true;
      } else if (e.kind == "sql" && !words.failed && (IsBegin(e) || IsCommit(e) || IsRollback(e)) &&
                 e.waited_us == 0) {
        // "COMMIT": its "ok" says nothing more, but the lock it released does.
        step.text = StepWords{words.what, WithLockNote("", lock_notes, i)}.Text();
      } else if (e.kind == "wait") {
        step.text = words.what;
        step.wait = true;
      } else if (e.kind == "sql") {
        // A write outside the lane's open transaction (or on another connection of the same
        // consumer) commits by itself, as every view says it.
        const std::string result = autocommits[i] ? words.result + " (autocommit)" : words.result;
        step.text = StepWords{words.what, WithLockNote(result, lock_notes, i)}.Text();
      } else {
        step.text = words.Text();
      }
      b.lane.steps.push_back(std::move(step));
    }
    auto mark = [&](Mark::Kind kind) {
      Mark m;
      m.kind = kind;
      m.at_us = e.at_us;
      m.text = words.Text();
      m.tone = words.tone;
      m.key = e.key;
      m.delivery = e.delivery;
      b.lane.marks.push_back(std::move(m));
    };
    if (e.kind == "open" && e.delivery > 0) {
      Mark m;
      m.kind = Mark::Kind::kDelivery;
      m.at_us = e.at_us;
      m.text = ids.DeliveryName(e);
      m.key = e.key;
      m.delivery = e.delivery;
      b.lane.marks.push_back(std::move(m));
    }
    if (e.kind == "sql") {
      AddStatement(b, e, ids, options);
    } else if (e.kind == "wait") {
      b.lane.waits.push_back(LockWait{e.at_us, e.at_us, 0, "", "", WaitTarget(e, ids, options)});
      b.waiting = b.lane.waits.size() - 1;
    } else if (e.kind == "hook") {
      mark(Mark::Kind::kHook);
    } else if (e.kind == "crash") {
      mark(Mark::Kind::kCrash);
      if (b.open) b.open->crashed = true;
    } else if (e.kind == "send") {
      mark(Mark::Kind::kSend);
    } else if (e.kind == "died") {
      mark(Mark::Kind::kDied);
      if (b.open) {
        Span span = std::move(*b.open);
        b.open.reset();
        span.end = Span::End::kDied;
        span.end_us = e.at_us;
        span.end_detail = words.result;
        b.lane.spans.push_back(std::move(span));
      }
    } else if (e.kind == "session-ended" || IsServerSessionEnd(e)) {
      // The server ended a session: its open transaction rolled back there. The database's
      // step (its own mark on its lane), ending the transaction on the lane of the session's
      // owner (older traces: the session-ended step on the owner's own lane).
      if (e.kind == "recover") mark(Mark::Kind::kRecover);
      LaneBuilder* owner = &b;
      if (ActorOf(e) == kActorDatabase) {
        auto it = builders.find(LaneOfBackend(events, i, e.backend));
        owner = it == builders.end() ? nullptr : &it->second;
        if (e.kind == "session-ended") mark(Mark::Kind::kRecover);
      }
      if (owner != nullptr && owner->open) {
        Span span = std::move(*owner->open);
        owner->open.reset();
        span.end = Span::End::kRollback;
        span.end_us = e.at_us;
        span.end_detail = words.Text();
        owner->lane.spans.push_back(std::move(span));
        owner->lane.last_us = std::max(owner->lane.last_us, e.at_us);
      }
    } else if (e.kind == "recover") {
      mark(Mark::Kind::kRecover);
    } else if (e.kind == "outcome") {
      mark(Mark::Kind::kOutcome);
    } else if (e.kind == "broker") {
      mark(e.op == "ack-lost" && key != "broker" ? Mark::Kind::kAckLost
           : IsSettle(e) && key != "broker"      ? Mark::Kind::kSettle
                                                 : Mark::Kind::kBroker);
    } else if (e.kind == "lock") {
      // A write lock held from its take to its release, drawn with the transaction.
      const std::string target = e.target.empty() ? "database" : e.target;
      if (e.detail == "write lock taken") {
        // From the statement it came with, as the pictures say it (the take is stamped as
        // that statement's step ended, and may sort before the statement's own stamp: the
        // cleanup's BEGIN IMMEDIATE, drawn a card's width after it on a step axis).
        const auto with = lock_notes.statement_of.find(i);
        const int64_t from = with == lock_notes.statement_of.end() ? e.at_us : events[with->second].at_us;
        b.holding.try_emplace(target, LockHeld{from, from, target});
      } else if (auto h = b.holding.find(target); e.detail == "write lock released" && h != b.holding.end()) {
        h->second.end_us = e.at_us;
        b.lane.held.push_back(h->second);
        b.holding.erase(h);
      }
    } else if (e.kind != "open") {
      mark(Mark::Kind::kOther);
    }
  }

  std::vector<Lane> lanes;
  for (const std::string& key : order) {
    LaneBuilder& b = builders[key];
    if (b.waiting) {
      LockWait& wait = b.lane.waits[*b.waiting];
      wait.end_us = b.lane.last_us;  // never got the lock while recorded
    }
    for (auto& [target, hold] : b.holding) {
      hold.end_us = b.lane.last_us;  // never released while recorded
      b.lane.held.push_back(hold);
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

std::vector<TraceEvent> FoldRepeatedDeliveries(const std::vector<TraceEvent>& events,
                                               ShortIds& ids) {
  // Each delivery's steps: every event stamped with its message (which stored copy of its
  // key) and the broker's number.
  using Stored = std::pair<std::string, int>;                    // key, copy
  std::map<Stored, std::map<int, std::vector<size_t>>> episodes;  // -> number -> events
  for (size_t i = 0; i < events.size(); ++i) {
    if (!events[i].key.empty() && events[i].delivery > 0) {
      episodes[{events[i].key, ids.CopyShown(events[i])}][events[i].delivery].push_back(i);
    }
  }
  const WordOptions plain{.timings = false, .pids = false};
  auto signature = [&](const std::vector<size_t>& steps) {
    std::vector<std::string> out;
    for (size_t i : steps) {
      TraceEvent e = events[i];
      e.delivery = 0;  // the number is what differs; the steps must not
      out.push_back(LaneKey(e).substr(0, LaneKey(e).rfind('/')) + "|" + e.kind + "|" +
                    DescribeStep(e, ids, plain).Text() + "|" + e.verdict);
    }
    return out;
  };
  std::vector<bool> dropped(events.size(), false);
  std::map<size_t, std::vector<TraceEvent>> folds;  // at a dropped event: the folds it starts
  for (const auto& [stored, numbered] : episodes) {
    std::vector<std::pair<int, std::vector<std::string>>> sigs;
    for (const auto& [number, steps] : numbered) sigs.emplace_back(number, signature(steps));
    for (size_t i = 0; i < sigs.size();) {
      size_t j = i;
      while (j + 1 < sigs.size() && sigs[j + 1].second == sigs[i].second &&
             sigs[j + 1].first == sigs[j].first + 1) {
        ++j;
      }
      if (j - i + 1 >= 3) {
        const std::vector<size_t>& first_folded = numbered.at(sigs[i + 1].first);
        const std::vector<size_t>& kept = numbered.at(sigs[i].first);
        for (size_t k = i + 1; k <= j; ++k) {
          for (size_t e : numbered.at(sigs[k].first)) dropped[e] = true;
        }
        // Drawn on the lane of the consumer that received them, where it received the first;
        // and on the broker's lane, where it handed out the first, when it took steps in them.
        auto make_fold = [&](const TraceEvent& from) {
          TraceEvent fold = from;
          fold.at_us = events[first_folded.front()].at_us;
          fold.kind = "fold";
          fold.op.clear();
          fold.table.clear();
          fold.target.clear();
          fold.delivery = 0;
          fold.verdict.clear();
          fold.result.clear();
          fold.detail = fmt::format("deliveries {} to {} of {}, each as delivery {}",
                                    sigs[i + 1].first, sigs[j].first,
                                    ids.Message(events[first_folded.front()]),
                                    sigs[i].first);
          return fold;
        };
        std::vector<TraceEvent>& here = folds[first_folded.front()];
        const auto broker = std::find_if(first_folded.begin(), first_folded.end(), [&](size_t e) {
          return ActorOf(events[e]) == kActorBroker;
        });
        if (broker != first_folded.end()) here.push_back(make_fold(events[*broker]));
        TraceEvent fold = make_fold(events[first_folded.front()]);
        for (size_t e : first_folded) {
          if (ActorOf(events[e]) == kActorConsumer) {
            fold = make_fold(events[e]);
            break;
          }
        }
        fold.result = DescribeStep(events[kept.back()], ids, plain).Text();
        if (ActorOf(fold) != kActorBroker) here.push_back(fold);
      }
      i = j + 1;
    }
  }
  std::vector<TraceEvent> out;
  for (size_t i = 0; i < events.size(); ++i) {
    if (auto f = folds.find(i); f != folds.end()) out.insert(out.end(), f->second.begin(), f->second.end());
    if (!dropped[i]) out.push_back(events[i]);
  }
  return out;
}

bool IsServerSessionEnd(const TraceEvent& e) {
  return ActorOf(e) == kActorDatabase && e.backend != 0 &&
         (e.kind == "session-ended" || e.kind == "recover");
}

std::string LaneOfBackend(const std::vector<TraceEvent>& events, size_t before, int backend) {
  if (backend == 0) return "";
  for (size_t k = std::min(before, events.size()); k-- > 0;) {
    if (events[k].backend == backend && ActorOf(events[k]) != kActorDatabase) {
      return LaneKey(events[k]);
    }
  }
  return "";
}

std::vector<TraceEvent> ServerEndsFirst(std::vector<TraceEvent> events) {
  for (size_t i = 0; i < events.size(); ++i) {
    if (!IsServerSessionEnd(events[i])) continue;
    const TraceEvent& end = events[i];
    const std::string owner = LaneOfBackend(events, i, end.backend);
    // Back to the owner's last step (its death, its stop): the end came after it.
    std::optional<size_t> to;
    for (size_t k = i; k-- > 0;) {
      const TraceEvent& s = events[k];
      if (!owner.empty() && LaneKey(s) == owner) break;
      if (s.kind != "sql" || ActorOf(s) == kActorDatabase) continue;
      // Recorded before the end but answered no earlier than it was stamped (a statement
      // that timed out waiting on the backend before it ended was answered earlier).
      if (s.at_us >= end.at_us) to = k;
    }
    if (!to) continue;
    // Before the lock take noted with that statement, if any.
    size_t at = *to;
    while (at > 0 && events[at - 1].kind == "lock" && LaneKey(events[at - 1]) == LaneKey(events[*to])) --at;
    TraceEvent moved = std::move(events[i]);
    events.erase(events.begin() + static_cast<std::ptrdiff_t>(i));
    events.insert(events.begin() + static_cast<std::ptrdiff_t>(at), std::move(moved));
  }
  return events;
}

std::vector<TraceEvent> CausalOrder(std::vector<TraceEvent> input) {
  std::vector<TraceEvent> events = ServerEndsFirst(std::move(input));
  constexpr int64_t kWindowUs = 2000;
  auto same_lane = [](const TraceEvent& a, const TraceEvent& b) {
    return a.instance == b.instance && a.pid == b.pid;
  };
  for (size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    if (e.kind != "sql" || !(e.busy_calls > 0)) continue;
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
    // The COMMIT's delivery outcome, stamped with the COMMIT (RecordNote), goes with it.
    size_t last = *end;
    while (last + 1 < events.size() && events[last + 1].kind == "outcome" &&
           same_lane(events[last + 1], events[*end]) && events[last + 1].at_us == events[*end].at_us) {
      ++last;
    }
    std::vector<TraceEvent> moved(std::make_move_iterator(events.begin() + static_cast<std::ptrdiff_t>(*end)),
                                  std::make_move_iterator(events.begin() + static_cast<std::ptrdiff_t>(last + 1)));
    events.erase(events.begin() + static_cast<std::ptrdiff_t>(*end),
                 events.begin() + static_cast<std::ptrdiff_t>(last + 1));
    events.insert(events.begin() + static_cast<std::ptrdiff_t>(to), std::make_move_iterator(moved.begin()),
                  std::make_move_iterator(moved.end()));
    i += moved.size();  // the waiting statement, now further on, is done
  }
  return events;
}

}  // namespace dedupsim
