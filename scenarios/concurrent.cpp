// concurrent: two copies of one message reach two consumer instances at once. The first
// claims the key and holds its transaction; the second's INSERT waits for the write lock,
// then fails on the primary key once the first commits.
#include <fmt/format.h>

#include <thread>

#include "common.h"
#include "concurrency.h"
#include "consumers/idempotent.h"
#include "instances.h"
#include "scenarios.h"

namespace dedupsim {

PairOutcome RunInboxPair(ScenarioEnv& env, const OrderPlaced& first_message,
                         const OrderPlaced& second_message) {
  auto handle = [&env](const OrderPlaced& message, int delivery,
                       std::chrono::milliseconds hold) {
    return [&env, message, delivery, hold](Connection& db) -> nlohmann::json {
      BeginDelivery(db, Delivered(message, delivery));
      IdempotentReserveStock consumer(db, env.clock);
      consumer.before_commit = [hold] { std::this_thread::sleep_for(hold); };
      const bool processed = consumer.Handle(message);
      NoteProcessed(db, processed);
      return processed;
    };
  };
  // The same message twice is its first and second delivery (both in flight at once).
  const int second_delivery = second_message.message_id == first_message.message_id ? 2 : 1;
  std::vector<InstanceTask> tasks{
      {"A", std::chrono::milliseconds(0), handle(first_message, 1, env.options.hold)},
      {"B", env.options.stagger,
       handle(second_message, second_delivery, std::chrono::milliseconds(0))},
  };
  std::vector<InstanceResult> results = RunInstances(env, tasks);
  PairOutcome out;
  out.first_processed = results[0].value.get<bool>();
  out.second_processed = results[1].value.get<bool>();
  out.first = results[0];
  out.second = results[1];
  return out;
}

void AddWaitFigures(const PairOutcome& pair, nlohmann::ordered_json& figures) {
  auto ms = [](std::chrono::microseconds us) { return static_cast<double>(us.count()) / 1000.0; };
  figures["secondWaited"] = pair.SecondWaited();
  figures["waitMs"] = std::lround(ms(pair.second.busy.waited));
  figures["busyRetries"] = pair.second.busy.calls;
  figures["secondMs"] = std::lround(ms(pair.second.elapsed));
  figures["firstMs"] = std::lround(ms(pair.first.elapsed));
}

nlohmann::ordered_json ExpectedWait(const RunOptions& o) {
  nlohmann::ordered_json expected = nlohmann::ordered_json::object();
  // Too close to call within the scheduler's jitter: no expectation.
  auto margin = std::chrono::milliseconds(50);
  if (o.hold >= o.stagger + margin) expected["secondWaited"] = true;
  if (o.stagger >= o.hold + margin) expected["secondWaited"] = false;
  return expected;
}

namespace {

Outcome Run(ScenarioEnv& env) {
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  PairOutcome pair = RunInboxPair(env, message, message);
  StockItem after = CurrentStock(env, dune);
  Outcome out;
  out.figures["instances"] = ToString(env.options.instances);
  out.figures["holdMs"] = env.options.hold.count();
  out.figures["staggerMs"] = env.options.stagger.count();
  out.figures["processed"] = {pair.first_processed, pair.second_processed};
  out.figures["reserved"] = after.reserved;
  AddWaitFigures(pair, out.figures);
  out.line = fmt::format(
      "{}two copies at once -> processed: {}, {}; {} reserved: {}; second waited for the first: {}",
      TagColumn("inbox"), CsBool(pair.first_processed), CsBool(pair.second_processed), after.title,
      after.reserved, CsBool(pair.SecondWaited()));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  nlohmann::ordered_json expected = {{"reserved", o.quantity}};
  // With a clear head start the first copy wins; started together, either may.
  if (o.stagger >= std::chrono::milliseconds(20)) expected["processed"] = {true, false};
  expected.update(ExpectedWait(o));
  return expected;
}

}  // namespace

const Scenario kConcurrentScenario{
    .name = "concurrent",
    .tag = "inbox",
    .summary = "two copies at once in two instances: the primary key lets one through, the other waits",
    .in_post = true,
    .traits = kHasInstances | kHasHold,
    .run = &Run,
    .expected = &Expected,
    .lesson =
        "Two consumer instances get the same message at nearly the same time, as happens when a lock or visibility timeout expires while the first is still working. Instance A claims the key and holds its transaction open (hook BeforeCommit, --hold-ms). Instance B starts later (--stagger-ms).\n"
        "\n"
        "Neither instance can settle this race by looking first: neither has committed anything to see. The database settles it. B's INSERT needs the write lock, so it waits in the busy handler until A commits; then its insert fails on the primary key and B rolls back without touching the stock.\n"
        "\n"
        "On SQLite, B waits for the whole database's write lock, not for one key as SQL Server would: see concurrent-different.",
    .hook_points = "BeforeCommit: instance A holds its open transaction there for --hold-ms",
    .try_next =
        "Let A commit before B starts, and B no longer waits:\n"
        "  dedupsim run concurrent --hold-ms 0 --trace",
};

}  // namespace dedupsim
