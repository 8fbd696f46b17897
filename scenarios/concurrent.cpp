// concurrent: two copies of one message reach two consumer instances at once. The first
// claims the key and holds its transaction; the second's INSERT waits for the write lock,
// then fails on the primary key once the first commits.
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "common.h"
#include "concurrency.h"
#include "consumers/idempotent.h"
#include "instances.h"
#include "scenarios.h"
#include "store/store.h"

namespace dedupsim {

bool PairOutcome::SecondWaited() const {
  if (!watched) return second.busy.calls > 0;
  for (const WatchedStatement& s : second_statements) {
    if (s.waited) return true;
  }
  return false;
}

std::string PairOutcome::SecondWaitedOn() const {
  if (!watched) return second.busy.calls > 0 ? "database" : "none";
  for (const WatchedStatement& s : second_statements) {
    if (s.waited) return s.waited_on;
  }
  return "none";
}

namespace {

using SteadyClock = std::chrono::steady_clock;

// The pair on a server database, as two threads with their own connections. B starts
// options.stagger after A has its connection, and never before the event the options
// promise: A holding its open transaction (stagger < hold), or A done (stagger >= hold).
PairOutcome RunInboxPairOnServer(ScenarioEnv& env, const OrderPlaced& first_message,
                                 const OrderPlaced& second_message) {
  struct Slot {
    bool processed = false;
    std::vector<WatchedStatement> statements;
    std::chrono::microseconds elapsed{0};
    std::exception_ptr error;
  };
  Slot a, b;
  std::mutex mu;
  std::condition_variable changed;
  bool a_started = false, a_holding = false, a_done = false;
  SteadyClock::time_point origin;
  auto set = [&](bool& flag) {
    std::lock_guard<std::mutex> lock(mu);
    flag = true;
    changed.notify_all();
  };
  auto run = [&env](Slot& slot, const std::string& name, const OrderPlaced& m, const Hook& hold,
                    const std::function<void()>& started) {
    try {
      std::unique_ptr<Store> store = OpenStore(env, name);
      auto t0 = SteadyClock::now();
      started();
      IdempotentReserveStock consumer(*store, env.clock);
      consumer.before_commit = hold;
      slot.processed = consumer.Handle(m);
      slot.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - t0);
      slot.statements = store->WatchedStatements();
    } catch (...) {
      slot.error = std::current_exception();
    }
  };
  const auto hold = env.options.hold;
  std::thread first([&] {
    run(
        a, "A", first_message,
        [&] {
          set(a_holding);
          std::this_thread::sleep_for(hold);
        },
        [&] {
          origin = SteadyClock::now();
          set(a_started);
        });
    set(a_done);
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    changed.wait(lock, [&] { return a_started || a_done; });
    const bool before_commit = env.options.stagger < hold;
    changed.wait_until(lock, origin + env.options.stagger, [] { return false; });
    changed.wait(lock, [&] { return a_done || (before_commit && a_holding); });
  }
  std::thread second([&] { run(b, "B", second_message, Hook(), [] {}); });
  first.join();
  second.join();
  if (a.error) std::rethrow_exception(a.error);
  if (b.error) std::rethrow_exception(b.error);
  PairOutcome out;
  out.first_processed = a.processed;
  out.second_processed = b.processed;
  out.first.name = "A";
  out.first.pid = static_cast<int>(getpid());
  out.first.elapsed = a.elapsed;
  out.second.name = "B";
  out.second.pid = out.first.pid;
  out.second.elapsed = b.elapsed;
  out.watched = true;
  out.second_statements = std::move(b.statements);
  return out;
}

}  // namespace

PairOutcome RunInboxPair(ScenarioEnv& env, const OrderPlaced& first_message,
                         const OrderPlaced& second_message) {
  if (env.backend != nullptr && env.backend->name() != "sqlite") {
    return RunInboxPairOnServer(env, first_message, second_message);
  }
  auto handle = [&env](const OrderPlaced& message, std::chrono::milliseconds hold) {
    return [&env, message, hold](Connection& db) -> nlohmann::json {
      IdempotentReserveStock consumer(db, env.clock);
      consumer.before_commit = [hold] { std::this_thread::sleep_for(hold); };
      return consumer.Handle(message);
    };
  };
  std::vector<InstanceTask> tasks{
      {"A", std::chrono::milliseconds(0), handle(first_message, env.options.hold)},
      {"B", env.options.stagger, handle(second_message, std::chrono::milliseconds(0))},
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
      if (!s.error_code.empty()) j["sqlstate"] = s.error_code;
      statements.push_back(std::move(j));
    }
    figures["secondWaited"] = pair.SecondWaited();
    figures["waitedOn"] = pair.SecondWaitedOn();
    figures["waitMs"] = std::lround(ms(waited));
    figures["secondMs"] = std::lround(ms(pair.second.elapsed));
    figures["firstMs"] = std::lround(ms(pair.first.elapsed));
    figures["secondStatements"] = std::move(statements);
    return;
  }
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
    .traits = kHasInstances | kHasHold | kAnyBackend,
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
