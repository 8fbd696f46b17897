// concurrent: two copies of one message reach two consumer instances at once. The first
// claims the key and holds its transaction; the second's INSERT waits for the write lock,
// then fails on the primary key once the first commits.
#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cmath>
#include <functional>
#include <optional>
#include <stdexcept>
#include <vector>

#include "common.h"
#include "concurrency.h"
#include "consumers/idempotent.h"
#include "lesson/instances.h"
#include "scenarios.h"
#include "store/error.h"
#include "store/store.h"

namespace dedupsim {

bool PairOutcome::SecondWaited() const {
  if (!watched) return WaitedFor(second.locks, first.locks);
  for (const WatchedStatement& s : second_statements) {
    if (s.waited) return true;
  }
  return false;
}

std::string PairOutcome::SecondWaitedOn() const {
  if (!watched) return SecondWaited() ? "database" : "none";
  for (const WatchedStatement& s : second_statements) {
    if (s.waited) return s.waited_on;
  }
  return "none";
}

PairTiming TimingFrom(const RunOptions& options) {
  return PairTiming{.hold = options.hold, .stagger = options.stagger};
}

PairOutcome RunStorePair(ScenarioEnv& env, const StoreTask& first, const StoreTask& second,
                         const std::optional<PairTiming>& timing, const HandSecond& hand_second) {
  PairTiming used = timing ? *timing : TimingFrom(env.options);
  // On a server the second's end releases the first as its wait does, so the first always
  // waits for one or the other (second_blocks), never for a lock the second does not meet.
  const bool watched = OnServer(env);
  if (watched) used.second_blocks = true;
  const std::array<const StoreTask*, 2> tasks{&first, &second};
  std::vector<InstanceResult> results = RunGatedPair(
      env, {first.name, second.name},
      [&env, &tasks](int index) {
        const StoreTask& task = *tasks[static_cast<size_t>(index)];
        // Connected before the race starts; its delivery begins when the instance runs, so
        // B's delivery is not drawn before A's however early B connected.
        return StorePairInstance(
            [&env, &task] { return OpenQuietStore(env, task.name); },
            [&task](Store& store, const Hook& hold_point,
                    const std::string& handed) -> nlohmann::json {
              DeliveryRef delivery = task.delivery;
              if (!handed.empty()) {
                const nlohmann::json d = nlohmann::json::parse(handed);
                delivery = {d.at("key").get<std::string>(), d.at("number").get<int>(),
                            d.at("copy").get<int>()};
              }
              if (delivery.number != 0) BeginDelivery(store, delivery);
              return task.body(store, hold_point);
            });
      },
      used, hand_second ? HandOver([&hand_second] {
        const DeliveryRef d = hand_second();
        return nlohmann::json{{"key", d.key}, {"number", d.number}, {"copy", d.copy}}.dump();
      })
                        : HandOver{});
  PairOutcome out;
  if (watched) {
    out.second_statements = results[1].statements;
    out.watched = true;
  }
  out.first = std::move(results[0]);
  out.second = std::move(results[1]);
  return out;
}

PairOutcome RunInboxPair(ScenarioEnv& env, const OrderPlaced& first_message,
                         const OrderPlaced& second_message, DeliveryRef first_delivery,
                         DeliveryRef second_delivery, const HandSecond& hand_second) {
  const bool same = second_message.message_id == first_message.message_id;
  auto handle = [&env, same](const OrderPlaced& message) {
    return [&env, message, same](Store& store, const Hook& hold_point) -> nlohmann::json {
      IdempotentReserveStock consumer(store, env.clock);
      consumer.before_commit = hold_point;
      const std::string isolation(ToString(store.isolation()));
      try {
        const bool processed = consumer.Handle(message);
        // Two copies of one message: right when the order is reserved once, read back now.
        // Two messages: each is right when it was processed.
        NoteProcessed(store, processed,
                      same ? ReservedVerdictApart(env, message.book_id, message.quantity)
                      : processed ? kVerdictRight
                                  : kVerdictWrong);
        return {{"processed", processed}, {"isolation", isolation}};
      } catch (const StoreError& e) {
        // A refused copy is right when the order took effect once; another message's
        // failure is not judged (the broker redelivers it).
        nlohmann::json failed =
            same ? SerializationFailure(
                       store, e, [&env, &message] { return ReservedVerdictApart(env, message); })
                 : SerializationFailure(store, e);
        failed["isolation"] = isolation;
        return failed;
      }
    };
  };
  // The same message twice is its first and second delivery (both in flight at once).
  const int second_number = same ? 2 : 1;
  if (first_delivery.number == 0) first_delivery = Delivered(first_message, 1);
  if (second_delivery.number == 0) second_delivery = Delivered(second_message, second_number);
  PairOutcome out = RunStorePair(env, {"A", first_delivery, handle(first_message)},
                                 {"B", second_delivery, handle(second_message)}, std::nullopt,
                                 hand_second);
  out.first_processed = out.first.value["processed"].get<bool>();
  out.second_processed = out.second.value["processed"].get<bool>();
  out.isolation = out.second.value["isolation"].get<std::string>();
  if (out.second.value.contains("sqlstate"))
    out.second_sqlstate = out.second.value["sqlstate"].get<std::string>();
  return out;
}

nlohmann::json SerializationFailure(Store& store, const StoreError& e,
                                    const std::function<const char*()>& verdict) {
  if (!e.IsRetryable()) throw;  // called from the handler: the error as it was thrown
  store.Rollback();
  NoteOutcome(store, "SerializationFailure", verdict ? verdict() : "");
  return {{"processed", false}, {"sqlstate", e.backend_code()}};
}

bool SecondMeetsSerializationFailure(const ScenarioEnv& env, const std::string& isolation) {
  return env.backend.name() != "sqlite" && isolation != "read-committed" &&
         env.options.stagger < env.options.hold;
}

void AddWaitFigures(const ScenarioEnv& env, const PairOutcome& pair,
                    nlohmann::ordered_json& figures, const std::string& prefix) {
  auto key = [&prefix](std::string name) {
    if (prefix.empty()) return name;
    name[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[0])));
    return prefix + name;
  };
  auto ms = [](std::chrono::microseconds us) { return static_cast<double>(us.count()) / 1000.0; };
  auto at = [&env](SteadyTime t) { return std::round(MsSinceOrigin(env, t) * 10.0) / 10.0; };
  if (pair.watched) {
    // Measured from the server's side: which of B's statements waited, on what, for whom.
    std::chrono::microseconds waited{0};
    nlohmann::ordered_json statements = nlohmann::ordered_json::array();
    for (const WatchedStatement& s : pair.second_statements) {
      if (s.waited) waited += s.elapsed;
      nlohmann::ordered_json j;
      j["sql"] = s.sql;
      j["waited"] = s.waited;
      j["waitedOn"] = s.waited ? s.waited_on : "none";
      if (s.waited) {
        j["waitEvent"] = s.wait_event;
        j["blockedBy"] = s.blocking_pids;
      }
      j["ms"] = std::round(ms(s.elapsed) * 10.0) / 10.0;
      if (s.rows >= 0) j["rows"] = s.rows;
      if (!s.error_code.empty()) j["sqlstate"] = s.error_code;
      statements.push_back(std::move(j));
    }
    figures[key("secondWaited")] = pair.SecondWaited();
    figures[key("waitedOn")] = pair.SecondWaitedOn();
    figures[key("waitMs")] = std::lround(ms(waited));
    figures[key("secondMs")] = std::lround(ms(pair.second.elapsed));
    figures[key("firstMs")] = std::lround(ms(pair.first.elapsed));
    figures[key("secondStatements")] = std::move(statements);
    return;
  }
  figures[key("secondWaited")] = pair.SecondWaited();
  if (pair.second.busy) {  // what B's busy handler counted
    figures[key("waitMs")] = std::lround(ms(pair.second.busy->waited));
    figures[key("busyRetries")] = pair.second.busy->calls;
  }
  figures[key("secondMs")] = std::lround(ms(pair.second.elapsed));
  figures[key("firstMs")] = std::lround(ms(pair.first.elapsed));
  nlohmann::ordered_json held = nlohmann::ordered_json::array();
  for (const LockHold& h : pair.first.locks.held) held.push_back({at(h.acquired), at(h.released)});
  figures[key("firstLockHeldMs")] = held;
  nlohmann::ordered_json blocked = nlohmann::ordered_json::array();
  for (const BlockedWait& w : pair.second.locks.waits)
    blocked.push_back({at(w.blocked), at(w.resumed)});
  figures[key("secondBlockedMs")] = blocked;
}

nlohmann::ordered_json ExpectedWait(const RunOptions& o) {
  return {{"secondWaited", o.stagger < o.hold}};
}

namespace concurrent_file {
namespace {

Outcome Run(ScenarioEnv& env) {
  // The broker hands the message to A; A's ack will not come in time (its connection to the
  // broker drops, or its ack deadline passes while it works), so while A holds its
  // transaction the broker hands the same message to B: two deliveries in flight at once.
  auto [dune, message, broker, log, first] = SendOneOrder(env, "A's delivery");
  std::optional<Delivery> second;
  PairOutcome pair = RunInboxPair(
      env, first.message, first.message, Delivered(first.message, first.delivery_count),
      {}, [&, &broker = broker, &log = log, &first = first] {
        broker->ReleaseUnacked(first);
        second = ReceiveNext(*broker, "the redelivery to B");
        log.Add(*second);
        return Delivered(second->message, second->delivery_count);
      });
  if (!second) throw std::logic_error("concurrent: the broker's redelivery to B never ran");
  broker->Ack(*second);  // B's skip is a success: acked
  StockItem after = CurrentStock(env, dune);
  Outcome out;
  out.figures["instances"] = ToString(env.options.instances);
  out.figures["holdMs"] = env.options.hold.count();
  out.figures["staggerMs"] = env.options.stagger.count();
  out.figures["processed"] = {pair.first_processed, pair.second_processed};
  out.figures["reserved"] = after.reserved;
  AddWaitFigures(env, pair, out.figures);
  out.figures["broker"] = log.Figures(*broker);
  out.line =
      fmt::format("{}two copies at once -> processed: {}, {}; {}; second waited for the first: {}",
                  TagColumn("inbox"), CsBool(pair.first_processed), CsBool(pair.second_processed),
                  JudgedReserved(after.title, after.reserved, env.options.quantity),
                  CsBool(pair.SecondWaited()));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  nlohmann::ordered_json expected = {{"reserved", o.quantity}};
  // B is released only once A holds the key (instances.h): the first copy always wins.
  expected["processed"] = {true, false};
  expected.update(ExpectedWait(o));
  return expected;
}

}  // namespace
}  // namespace concurrent_file

const Scenario kConcurrentScenario{
    .name = "concurrent",
    .tag = "inbox",
    .summary =
        "two copies at once in two instances: the primary key lets one through, the other waits",
    .in_post = true,
    .traits = kHasInstances | kHasHold | kAnyBackend | kRealBroker,
    .run = &concurrent_file::Run,
    .expected = &concurrent_file::Expected,
    .lesson =
        "Two consumer instances get the same message at nearly the same time, as happens when a "
        "lock or visibility timeout expires while the first is still working. Instance A claims "
        "the key and holds its transaction open (hook BeforeCommit, --hold-ms). Instance B starts "
        "later (--stagger-ms).\n"
        "\n"
        "Neither instance can settle this race by looking first: neither has committed anything to "
        "see. The database settles it. B's INSERT needs the write lock, so it waits in the busy "
        "handler until A commits; then its insert fails on the primary key and B rolls back "
        "without touching the stock.\n"
        "\n"
        "On SQLite, B waits for the whole database's write lock, not for one key as SQL Server "
        "would: see concurrent-different.",
    .hook_points = "BeforeCommit: instance A holds its open transaction there for --hold-ms",
    .try_next =
        "Let A commit before B starts, and B no longer waits:\n"
        "  dedupsim run concurrent --hold-ms 0 --trace",
};
const LessonRegistration kConcurrentLesson{kConcurrentScenario,
                                           {.rank = 50, .theme = Theme::kPostsSix}};

}  // namespace dedupsim
