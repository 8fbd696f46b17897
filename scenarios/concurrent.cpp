// concurrent: two copies of one message reach two consumer instances at once. The first
// claims the key and holds its transaction; the second's INSERT waits for the write lock,
// then fails on the primary key once the first commits.
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "child_process.h"
#include "common.h"
#include "concurrency.h"
#include "consumers/idempotent.h"
#include "crash.h"
#include "instances.h"
#include "pipe_io.h"
#include "scenarios.h"
#include "sqlite/store.h"
#include "store/store.h"
#include "trace_json.h"

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

namespace {

using SteadyClock = std::chrono::steady_clock;

// The pair on a server database, as two threads with their own stores, in
// RunInstancePair's order (instances.h), settled by events: both connect first; A runs to
// its hold point (BeforeCommit) and announces that moment, R. With stagger < hold, B is
// released at R + stagger and A goes on at R + hold, but not before B is blocked on a lock
// (the server shows it waiting) or has finished without meeting one; with stagger >= hold,
// B starts at R + stagger and not before A has ended. Should A end without reaching its hold point,
// B is released then. A starved thread changes the timings, never which of the two happens. The
// server's lock waits are read from a side connection (Store::WatchedStatements).
std::vector<InstanceResult> RunStorePairOnServer(ScenarioEnv& env, const StoreTask& first_task,
                                                 const StoreTask& second_task,
                                                 const PairTiming& timing,
                                                 std::vector<WatchedStatement>* second_statements) {
  struct Slot {
    nlohmann::json value;
    std::vector<WatchedStatement> statements;
    std::chrono::microseconds elapsed{0};
    std::exception_ptr error;
  };
  Slot a, b;
  std::mutex mu;
  std::condition_variable changed;
  bool a_holding = false, a_done = false, b_blocked = false, b_done = false;
  SteadyClock::time_point held_at;
  // timing.second_blocks does not apply here: B's end releases A as its wait does, so A
  // never waits for a lock B does not meet.
  const auto hold = timing.hold;
  const auto stagger = timing.stagger;
  auto mark = [&](bool& flag) {
    std::lock_guard<std::mutex> lock(mu);
    flag = true;
    changed.notify_all();
  };
  // Opens the store, waits for start (after connecting), runs the task.
  auto run = [&env](Slot& slot, const StoreTask& task, const Hook& hold_point,
                    const std::function<void(Store&)>& start) {
    try {
      std::unique_ptr<Store> store = OpenStore(env, task.name, task.delivery);
      start(*store);
      auto t0 = SteadyClock::now();
      slot.value = task.body(*store, hold_point);
      slot.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - t0);
      slot.statements = store->WatchedStatements();
    } catch (...) {
      slot.error = std::current_exception();
    }
  };
  std::thread first([&] {
    Hook hold_point = [&] {
      std::unique_lock<std::mutex> lock(mu);
      held_at = SteadyClock::now();
      a_holding = true;
      changed.notify_all();
      const auto resume = held_at + hold;
      changed.wait_until(lock, resume, [&] { return SteadyClock::now() >= resume; });
      if (stagger < hold) changed.wait(lock, [&] { return b_blocked || b_done; });
    };
    run(a, first_task, hold_point, [](Store&) {});
    mark(a_done);
  });
  std::thread second([&] {
    run(b, second_task, Hook(), [&](Store& store) {
      store.SetWaitListener([&] { mark(b_blocked); });
      std::unique_lock<std::mutex> lock(mu);
      changed.wait(lock, [&] { return a_holding || a_done; });
      if (a_done) return;
      const auto release = held_at + stagger;
      changed.wait_until(lock, release, [&] { return SteadyClock::now() >= release; });
      if (stagger >= hold) changed.wait(lock, [&] { return a_done; });
    });
    mark(b_done);
  });
  first.join();
  second.join();
  if (a.error) std::rethrow_exception(a.error);
  if (b.error) std::rethrow_exception(b.error);
  std::vector<InstanceResult> results(2);
  results[0].name = first_task.name;
  results[0].pid = static_cast<int>(getpid());
  results[0].value = std::move(a.value);
  results[0].elapsed = a.elapsed;
  results[1].name = second_task.name;
  results[1].pid = results[0].pid;
  results[1].value = std::move(b.value);
  results[1].elapsed = b.elapsed;
  *second_statements = std::move(b.statements);
  return results;
}

nlohmann::json StatementsToJson(const std::vector<WatchedStatement>& statements) {
  nlohmann::json out = nlohmann::json::array();
  for (const WatchedStatement& s : statements) {
    out.push_back({{"sql", s.sql},
                   {"waited", s.waited},
                   {"waitedOn", s.waited_on},
                   {"waitEvent", s.wait_event},
                   {"blockedBy", s.blocking_pids},
                   {"error", s.error_code},
                   {"rows", s.rows},
                   {"us", s.elapsed.count()}});
  }
  return out;
}

std::vector<WatchedStatement> StatementsFromJson(const nlohmann::json& j) {
  std::vector<WatchedStatement> out;
  for (const auto& s : j) {
    WatchedStatement w;
    w.sql = s.value("sql", "");
    w.waited = s.value("waited", false);
    w.waited_on = s.value("waitedOn", "");
    w.wait_event = s.value("waitEvent", "");
    w.blocking_pids = s.value("blockedBy", std::vector<int>{});
    w.error_code = s.value("error", "");
    w.rows = s.value("rows", int64_t{-1});
    w.elapsed = std::chrono::microseconds(s.value("us", int64_t{0}));
    out.push_back(std::move(w));
  }
  return out;
}

// The pair on a server database as two forked processes, each opening its own connection
// after the fork, in the same order as the threads above: A reports the moment it reached
// its hold point through a pipe (or EOF, should it end first); B is forked options.stagger
// after that moment. Each child sends back its value, its statements as the server saw
// them and its trace; a child that dies otherwise is an UnplannedDeath.
std::vector<InstanceResult> RunStorePairAsProcesses(
    ScenarioEnv& env, const StoreTask& first_task, const StoreTask& second_task,
    const PairTiming& timing, std::vector<WatchedStatement>* second_statements) {
  struct Child {
    pid_t pid = -1;
    int fd = -1;  // the child's report
  };
  // close_in_child: pipe ends the child must not hold; blocked_write >= 0: the child
  // writes a byte there when the server shows its statement waiting for a lock.
  auto start = [&env](const StoreTask& task, const Hook& hold, int extra_fd,
                      std::vector<int> close_in_child, int blocked_write) {
    int fds[2];
    if (::pipe(fds) != 0) throw DatabaseError(fmt::format("pipe: {}", std::strerror(errno)));
    pid_t pid = ForkChild();  // dies with this process
    if (pid < 0) throw DatabaseError(fmt::format("fork: {}", std::strerror(errno)));
    if (pid == 0) {
      ::signal(SIGPIPE, SIG_IGN);
      ::close(fds[0]);
      for (int fd : close_in_child) ::close(fd);
      env.recorder.Clear();
      int code = 0;
      bool told = false;
      try {
        std::unique_ptr<Store> store = OpenStore(env, task.name, task.delivery);
        if (blocked_write >= 0) {
          store->SetWaitListener([&told, blocked_write] {
            if (told) return;
            WriteAll(blocked_write, "b");
            told = true;
          });
        }
        auto t0 = SteadyClock::now();
        nlohmann::json message;
        message["value"] = task.body(*store, hold);
        message["elapsedUs"] =
            std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - t0).count();
        message["statements"] = StatementsToJson(store->WatchedStatements());
        store.reset();  // closed before the parent reads the tables
        message["events"] = EventsToJson(env.recorder.Events());
        if (extra_fd >= 0) ::close(extra_fd);  // A ended: EOF for a parent still waiting
        WriteAll(fds[1], message.dump());
      } catch (const std::exception& e) {
        WriteAll(STDERR_FILENO, fmt::format("dedupsim: instance {} (pid {}): {}\n", task.name,
                                            getpid(), e.what()));
        code = 70;
      }
      ::_exit(code);
    }
    ::close(fds[1]);
    return Child{pid, fds[0]};
  };
  int reached[2];
  if (::pipe(reached) != 0) throw DatabaseError(fmt::format("pipe: {}", std::strerror(errno)));
  int blocked[2];  // B -> A: B waits for a lock (or EOF: B ended)
  if (::pipe(blocked) != 0) {
    ::close(reached[0]);
    ::close(reached[1]);
    throw DatabaseError(fmt::format("pipe: {}", std::strerror(errno)));
  }
  const auto hold = timing.hold;
  const bool wait_for_b = timing.stagger < hold;  // as on SQLite (instances.h)
  const int reached_write = reached[1];
  const int blocked_read = blocked[0];
  Hook hold_point = [reached_write, blocked_read, hold, wait_for_b] {
    auto at = SteadyClock::now();
    WriteAll(
        reached_write,
        fmt::format(
            "{}\n",
            std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count()));
    std::this_thread::sleep_for(hold);
    if (wait_for_b) WaitReadable(blocked_read, std::chrono::seconds(30));
  };
  std::array<Child, 2> children;
  children[0] = start(first_task, hold_point, reached_write, {blocked[1], reached[0]}, -1);
  ::close(reached[1]);
  std::string line = ReadLine(reached[0]);  // A's hold point, or EOF: A ended without one
  ::close(reached[0]);
  if (!line.empty()) {
    SteadyClock::time_point held_at{std::chrono::duration_cast<SteadyClock::duration>(
        std::chrono::nanoseconds(std::stoll(line)))};
    std::this_thread::sleep_until(held_at + timing.stagger);
  }
  children[1] = start(second_task, Hook(), -1, {blocked[0]}, blocked[1]);
  ::close(blocked[0]);
  ::close(blocked[1]);

  std::vector<InstanceResult> results;
  for (ChildReport& report : CollectChildReports(
           env, {{first_task.name, static_cast<int>(children[0].pid), children[0].fd},
                 {second_task.name, static_cast<int>(children[1].pid), children[1].fd}})) {
    if (results.size() == 1) *second_statements = StatementsFromJson(report.message["statements"]);
    results.push_back(std::move(report.result));
  }
  return results;
}

// The same task on a SQLite connection of RunInstancePair: a store borrowing it.
InstanceTask OnSqlite(const StoreTask& task) {
  return {task.name, [task](Connection& db, const Hook& hold_point) -> nlohmann::json {
            if (task.delivery.number != 0) BeginDelivery(db, task.delivery);
            SqliteStore store(db);
            return task.body(store, hold_point);
          }};
}

}  // namespace

PairOutcome RunStorePair(ScenarioEnv& env, const StoreTask& first, const StoreTask& second,
                         const std::optional<PairTiming>& timing) {
  PairOutcome out;
  std::vector<InstanceResult> results;
  const PairTiming used = timing ? *timing : TimingFrom(env.options);
  if (env.backend != nullptr && env.backend->name() != "sqlite") {
    results = env.options.instances == InstanceMode::kProcesses
                  ? RunStorePairAsProcesses(env, first, second, used, &out.second_statements)
                  : RunStorePairOnServer(env, first, second, used, &out.second_statements);
    out.watched = true;
  } else {
    results = RunInstancePair(env, OnSqlite(first), OnSqlite(second), used);
  }
  out.first = std::move(results[0]);
  out.second = std::move(results[1]);
  return out;
}

PairOutcome RunInboxPair(ScenarioEnv& env, const OrderPlaced& first_message,
                         const OrderPlaced& second_message) {
  auto handle = [&env](const OrderPlaced& message) {
    return [&env, message](Store& store, const Hook& hold_point) -> nlohmann::json {
      IdempotentReserveStock consumer(store, env.clock);
      consumer.before_commit = hold_point;
      const bool processed = consumer.Handle(message);
      NoteProcessed(store, processed);
      return processed;
    };
  };
  // The same message twice is its first and second delivery (both in flight at once).
  const int second_delivery = second_message.message_id == first_message.message_id ? 2 : 1;
  PairOutcome out =
      RunStorePair(env, {"A", Delivered(first_message, 1), handle(first_message)},
                   {"B", Delivered(second_message, second_delivery), handle(second_message)});
  out.first_processed = out.first.value.get<bool>();
  out.second_processed = out.second.value.get<bool>();
  return out;
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
  figures[key("waitMs")] = std::lround(ms(pair.second.busy.waited));
  figures[key("busyRetries")] = pair.second.busy.calls;
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
  AddWaitFigures(env, pair, out.figures);
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

const Scenario kConcurrentScenario{
    .name = "concurrent",
    .tag = "inbox",
    .summary =
        "two copies at once in two instances: the primary key lets one through, the other waits",
    .in_post = true,
    .traits = kHasInstances | kHasHold | kAnyBackend,
    .run = &Run,
    .expected = &Expected,
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

}  // namespace dedupsim
