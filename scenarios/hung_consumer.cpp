// hung-consumer: a consumer that holds a key and then dies is not the same as one that
// holds it and hangs. A claims the key (the inbox consumer, stopped at BeforeCommit in a
// child process); B, the redelivery, claims the same key and waits. Killed: the database
// frees A's key as soon as it sees A gone, and B goes on. Stopped (SIGSTOP): nothing about
// A's process tells the database anything; only a timeout frees B. On PostgreSQL that is
// idle_in_transaction_session_timeout on A's session (the server ends it) or lock_timeout
// on B (B gives up with 55P03 and the message is redelivered later); on SQLite, B's busy
// timeout gives up, and nothing frees the file while A lives.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include <unistd.h>

#include "common.h"
#include "consumers/idempotent.h"
#include "lesson/crash.h"
#include "lesson/lock_waiter.h"
#include "scenarios.h"
#include "store/error.h"
#include "store/lock_waits.h"

namespace dedupsim {
namespace hung_consumer_file {
namespace {

using Steady = std::chrono::steady_clock;

// Deliveries of the hung half's message the broker makes before giving up on it.
constexpr int kMaxDeliveries = 20;

double Ms(std::chrono::microseconds us) {
  return std::round(static_cast<double>(us.count()) / 100.0) / 10.0;
}
double MsBetween(Steady::time_point from, Steady::time_point to) {
  return Ms(std::chrono::duration_cast<std::chrono::microseconds>(to - from));
}

// A's delivery in its child: the inbox consumer, standing at BeforeCommit with its claim
// and its stock update in an open transaction. idle_timeout > 0: set on A's session first.
std::function<void(const Hook&)> Holder(ScenarioEnv& env, const OrderPlaced& m,
                                        std::chrono::milliseconds idle_timeout) {
  return [&env, m, idle_timeout](const Hook& stand) {
    std::unique_ptr<Store> store = OpenStore(env, "A", Delivered(m, 1));
    if (idle_timeout.count() > 0) {
      store->SetIdleInTransactionTimeout(idle_timeout);
      store->Note("set",
                  fmt::format("idle_in_transaction_session_timeout = {} ms", idle_timeout.count()),
                  "ok");
    }
    IdempotentReserveStock consumer(*store, env.clock);
    consumer.before_commit = stand;
    consumer.Handle(m);
  };
}

// A's process, seen by the parent: stopped, or killed (on its own lane). at: when it
// happened, if not now (a kill is noted once the child is reaped, with its wait status, but
// happened when the parent sent the signal: before the waiter went on, not after).
void NoteProcess(ScenarioEnv& env, pid_t pid, const std::string& kind, const std::string& what,
                 std::optional<Steady::time_point> at = std::nullopt) {
  TraceEvent e;
  e.at_us = at ? env.recorder.MicrosAt(*at) : env.recorder.MicrosSinceOrigin();
  e.instance = "A";
  e.pid = static_cast<int>(pid);
  e.kind = kind;
  e.actor = kActorConsumer;
  e.detail = "BeforeCommit";
  e.result = what;
  env.recorder.Record(std::move(e));
}

// A's session ended by the server (idle_in_transaction_session_timeout): its transaction
// rolled back, its locks released. The server's step, done by A's backend (TraceEvent::
// backend) while A's process stood stopped: it ran nothing. Seen by the main process as
// that backend gone from pg_stat_activity, after the fact; nobody measured when it
// happened, only the answer of the delivery it let go on, which it came before: stamped at
// that answer, and said so, and the views put it before that answer (ServerEndsFirst).
void NoteSessionEnded(ScenarioEnv& env, pid_t pid, int backend, Steady::time_point went_on) {
  TraceEvent e;
  e.at_us = env.recorder.MicrosAt(went_on);
  e.instance = "database";
  e.pid = static_cast<int>(::getpid());  // the main process, which saw it
  e.kind = "session-ended";
  e.actor = kActorDatabase;
  e.backend = backend;
  e.detail = fmt::format("pid {}", pid);  // the stopped process whose session it was
  e.result = fmt::format(
      "idle_in_transaction_session_timeout: its transaction rolled back, its locks released, "
      "before the delivery that went on got its answer (noted at that answer; its backend, "
      "pid {}, gone from pg_stat_activity)",
      backend);
  env.recorder.Record(std::move(e));
}

// One delivery's claim as it went: how long its INSERT waited, on what, and how it ended.
struct Attempt {
  bool waited = false;
  // The claim's wait as every view says it: from the wait's start, as the server dated it,
  // to the answer (WatchedStatement::waited_for); the claim's whole time when it did not wait.
  double wait_ms = 0;
  double after_event_ms = -1;  // from the kill to the answer (killed half)
  std::vector<int> blocked_by;
  std::string sqlstate;  // "" on success; "55P03", "5"
  bool processed = false;
};

nlohmann::ordered_json ToJson(const Attempt& a) {
  nlohmann::ordered_json j;
  j["waited"] = a.waited;
  j["waitMs"] = a.wait_ms;
  if (a.after_event_ms >= 0) j["afterKillMs"] = a.after_event_ms;
  j["blockedBy"] = a.blocked_by;
  j["sqlstate"] = a.sqlstate;
  j["processed"] = a.processed;
  return j;
}

// The half's broker (the simulation's): it hands A the first delivery, and each delivery
// after it to B. A never acks (it is killed or hangs at BeforeCommit): the broker gives its
// delivery out again; B's delivery is acked when its claim went through, nacked (back in the
// queue) when it failed.
class HalfBroker {
 public:
  HalfBroker(ScenarioEnv& env, const OrderPlaced& m)
      : env_(env), broker_(OpenBroker(env, {.max_delivery_count = kMaxDeliveries})) {
    broker_->Send(m);
    held_ = ReceiveNext(*broker_, "A's delivery");
    env_.recorder.TakeOfferedDelivery();  // A's child opens it as delivery 1 itself
    a_unacked_ = true;
  }
  // The next delivery, for B (A's, never acked, given back first).
  DeliveryRef Next() {
    if (a_unacked_) broker_->ReleaseUnacked(held_);
    a_unacked_ = false;
    held_ = ReceiveNext(*broker_, "a redelivery");
    return env_.recorder.TakeOfferedDelivery();
  }
  // B's delivery ended as `claim`: acked, or nacked when its claim failed.
  void Settle(const Attempt& claim) {
    if (claim.sqlstate.empty()) {
      broker_->Ack(held_);
    } else {
      broker_->Abandon(held_);
    }
  }

 private:
  ScenarioEnv& env_;
  std::unique_ptr<Broker> broker_;
  Delivery held_;
  bool a_unacked_ = false;
};

// A delivery of m on the server, run by a LockWaiter: the inbox consumer, with
// lock_timeout set on its session first when given. A failed claim is kept, not thrown.
// A delivery that went through is judged from Reserved read back after it (right when the
// order took effect once: the hung A's work never committed); a failed claim (a lock
// timeout, nacked) is not: the message goes back to the broker, nothing doubled or lost yet.
struct ServerDelivery {
  ServerDelivery(ScenarioEnv& env, const OrderPlaced& m, const DeliveryRef& delivery,
                 std::chrono::milliseconds lock_timeout)
      : waiter(env.backend, &env.recorder, "B", kActorConsumer, delivery,
               [this, &env, m, lock_timeout](Store& store) {
                 if (lock_timeout.count() > 0) {
                   store.SetLockTimeout(lock_timeout);
                   store.Note("set", fmt::format("lock_timeout = {} ms", lock_timeout.count()),
                              "ok");
                 }
                 try {
                   attempt.processed = IdempotentReserveStock(store, env.clock).Handle(m);
                   NoteProcessed(store, attempt.processed, ReservedVerdictApart(env, m));
                 } catch (const StoreError& e) {
                   attempt.sqlstate = e.backend_code();
                   NoteOutcome(store, "Failed: " + e.backend_code());  // the nack is its own later step
                 }
               }) {}

  // After the work ended: the claim as the server saw it.
  const Attempt& Finish() {
    waiter.Join();
    const auto& statements = waiter.statements();
    for (const WatchedStatement& s : statements) {
      if (s.sql.find("INSERT INTO Inbox") == std::string::npos) continue;
      attempt.waited = s.waited;
      attempt.wait_ms = Ms(s.waited ? s.waited_for : s.elapsed);
      attempt.blocked_by = s.blocking_pids;
      answered = s.answered;
      break;
    }
    return attempt;
  }

  Attempt attempt;
  Steady::time_point answered{};
  LockWaiter waiter;
};

// What let a delivery of the hung half end: its own lock_timeout (55P03), or, for one that
// went through, A's session ended by the server (A's backend, a_backend, gone from
// pg_stat_activity while A's process is still stopped). A redelivery that came after the
// session had ended did not wait, and still owes its success to that.
std::string FreedBy(const ScenarioEnv& env, const Attempt& a, int a_backend) {
  if (a.sqlstate == "55P03") return "lock_timeout";
  if (!a.sqlstate.empty() || a_backend == 0) return "none";
  // A's backend gone from pg_stat_activity (it frees its locks first and leaves the list a
  // moment later: waited for up to 5 s).
  return env.backend.AwaitSessionGone(a_backend, std::chrono::seconds(5))
             ? "idle_in_transaction_session_timeout"
             : "none";
}

Outcome RunOnServer(ScenarioEnv& env) {
  const RunOptions& o = env.options;
  Outcome out;

  env.recorder.BeginPart("killed: A is SIGKILLed while B waits for its key");
  StockItem dune = Restock(env);
  OrderPlaced m = NewOrder(env, dune);
  Attempt killed;
  {
    HalfBroker broker(env, m);
    ChildAtHook a(env, "A", "BeforeCommit", Holder(env, m, std::chrono::milliseconds(0)), nullptr,
                  ChildAtHook::Ending::kSigkill);
    if (!a.AwaitHook()) throw DatabaseError("hung-consumer: A ended before BeforeCommit");
    ServerDelivery b(env, m, broker.Next(), std::chrono::milliseconds(0));
    b.waiter.AwaitBlocked(std::chrono::seconds(30));
    const auto killed_at = Steady::now();
    a.End();
    killed = b.Finish();
    const std::optional<int> status = a.Reap();
    NoteProcess(env, a.pid(), "died",
                fmt::format("pid {} {}", a.pid(), ChildAtHook::HowItEnded(status)), killed_at);
    if (killed.waited) killed.after_event_ms = MsBetween(killed_at, b.answered);
    broker.Settle(killed);
  }
  const int64_t reserved_killed = CurrentStock(env, dune).reserved;

  env.recorder.BeginPart("hung: A is SIGSTOPped with its transaction open");
  dune = Restock(env);
  m = NewOrder(env, dune);
  Attempt hung, redelivered;
  std::string freed_by, redelivery_freed_by;
  int redeliveries = 0;
  {
    HalfBroker broker(env, m);
    ChildAtHook a(env, "A", "BeforeCommit", Holder(env, m, o.idle_timeout), nullptr,
                  ChildAtHook::Ending::kSigkill);
    if (!a.AwaitHook()) throw DatabaseError("hung-consumer: A ended before BeforeCommit");
    if (!a.Stop()) throw DatabaseError("hung-consumer: A ended instead of stopping (SIGSTOP)");
    NoteProcess(env, a.pid(), "stopped", fmt::format("pid {} stopped by SIGSTOP", a.pid()));
    Steady::time_point went_on{};  // when the delivery that went through was answered
    {
      ServerDelivery b(env, m, broker.Next(), o.lock_timeout);
      hung = b.Finish();
      went_on = b.answered;
    }
    broker.Settle(hung);
    // A's backend: the one B's first claim was blocked by.
    const int a_backend = hung.blocked_by.empty() ? 0 : hung.blocked_by.front();
    freed_by = FreedBy(env, hung, a_backend);
    // The broker redelivers a nacked message; each redelivery waits up to its lock_timeout
    // again, for as long as A's session holds the key.
    for (int number = 3; !hung.sqlstate.empty() && number <= kMaxDeliveries; ++number) {
      ServerDelivery c(env, m, broker.Next(), o.lock_timeout);
      redelivered = c.Finish();
      broker.Settle(redelivered);
      went_on = c.answered;
      redelivery_freed_by = FreedBy(env, redelivered, a_backend);
      ++redeliveries;
      if (redelivered.sqlstate.empty()) break;
    }
    // The server ended A's session while A stayed stopped (its backend is gone from
    // pg_stat_activity: FreedBy), so A held nothing by the time the waiter went on: the
    // database's step, noted at that answer, not when it was found out.
    if ((redeliveries > 0 ? redelivery_freed_by : freed_by) == "idle_in_transaction_session_timeout") {
      NoteSessionEnded(env, a.pid(), a_backend, went_on);
    }
    // A never outlives the lesson: killed (and reaped) here, stopped as it is.
    a.End();
    const std::optional<int> status = a.Reap();
    NoteProcess(env, a.pid(), "died",
                fmt::format("pid {} {} at the end", a.pid(), ChildAtHook::HowItEnded(status)));
  }
  const StockItem after = CurrentStock(env, dune);

  out.figures["killed"] = ToJson(killed);
  out.figures["killedReserved"] = reserved_killed;
  out.figures["idleTimeoutMs"] = o.idle_timeout.count();
  out.figures["lockTimeoutMs"] = o.lock_timeout.count();
  out.figures["hung"] = ToJson(hung);
  out.figures["freedBy"] = freed_by;
  if (!hung.sqlstate.empty()) {
    out.figures["redeliveries"] = redeliveries;
    out.figures["redelivered"] = ToJson(redelivered);  // the last redelivery
    out.figures["redeliveryFreedBy"] = redelivery_freed_by;
  }
  out.figures["reserved"] = after.reserved;

  std::string hung_phrase;
  if (hung.sqlstate.empty()) {
    hung_phrase = fmt::format("B waited {:.0f} ms, freed by {}, processed: {}", hung.wait_ms,
                              freed_by, CsBool(hung.processed));
  } else {
    hung_phrase = fmt::format(
        "B gave up after {:.0f} ms ({}, {}); redelivered {} time{}, the last waited {:.0f} ms, "
        "freed by {}, processed: {}",
        hung.wait_ms, freed_by, hung.sqlstate, redeliveries, redeliveries == 1 ? "" : "s",
        redelivered.wait_ms, redelivery_freed_by, CsBool(redelivered.processed));
  }
  out.line = fmt::format(
      "{}A killed -> B waited {:.1f} ms after the kill, processed: {}; A hung -> {}; {}",
      TagColumn("hung-consumer"), killed.after_event_ms, CsBool(killed.processed), hung_phrase,
      JudgedReserved(after.title, after.reserved, o.quantity));
  return out;
}

// SQLite: B on a store of its own in a thread, its waits in its busy handler (the store's
// LockWaits); its outcome judged as ServerDelivery's.
struct SqliteDelivery {
  SqliteDelivery(ScenarioEnv& env, const OrderPlaced& m, const DeliveryRef& delivery,
                 std::chrono::milliseconds busy_timeout) {
    thread = std::thread([this, &env, m, delivery, busy_timeout] {
      try {
        std::unique_ptr<Store> store = OpenStore(env, "B", delivery);
        store->SetLockTimeout(busy_timeout);
        LockWaits* waits = store->lock_waits();
        if (waits == nullptr) throw DatabaseError("hung-consumer: the store keeps no lock waits");
        waits->KeepLockHistory();
        store->SetWaitListener([this] {
          std::lock_guard<std::mutex> lock(mu);
          blocked = true;
          changed.notify_all();
        });
        try {
          attempt.processed = IdempotentReserveStock(*store, env.clock).Handle(m);
          NoteProcessed(*store, attempt.processed, ReservedVerdictApart(env, m));
        } catch (const StoreError& e) {
          attempt.sqlstate = e.backend_code();
          NoteOutcome(*store, "Failed: SQLite " + e.backend_code());  // the nack follows
        }
        busy = waits->busy();
        waits->Close();
        history = waits->lock_history();
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mu);
      done = true;
      changed.notify_all();
    });
  }
  ~SqliteDelivery() {
    if (thread.joinable()) thread.join();
  }
  void AwaitBlocked() {
    std::unique_lock<std::mutex> lock(mu);
    changed.wait_for(lock, std::chrono::seconds(30), [this] { return blocked || done; });
  }
  const Attempt& Finish() {
    thread.join();
    if (error) std::rethrow_exception(error);
    attempt.waited = busy.calls > 0;
    attempt.wait_ms = Ms(busy.waited);
    if (!history.waits.empty()) resumed = history.waits.front().resumed;
    return attempt;
  }

  std::mutex mu;
  std::condition_variable changed;
  bool blocked = false, done = false;
  Attempt attempt;
  BusyStats busy;
  LockHistory history;
  SteadyTime resumed{};
  std::exception_ptr error;
  std::thread thread;
};

Outcome RunOnSqlite(ScenarioEnv& env) {
  const RunOptions& o = env.options;
  // B's busy timeout stands for the waiter's lock_timeout: SQLite has no other.
  const auto busy_timeout =
      o.lock_timeout.count() > 0 ? o.lock_timeout : std::chrono::milliseconds(1000);
  Outcome out;

  env.recorder.BeginPart("killed: A is SIGKILLed while B waits for the write lock");
  StockItem dune = Restock(env);
  OrderPlaced m = NewOrder(env, dune);
  Attempt killed;
  {
    HalfBroker broker(env, m);
    ChildAtHook a(env, "A", "BeforeCommit", Holder(env, m, std::chrono::milliseconds(0)), nullptr,
                  ChildAtHook::Ending::kSigkill);
    if (!a.AwaitHook()) throw DatabaseError("hung-consumer: A ended before BeforeCommit");
    // While A lives, B's wait must not time out: the kill is what this half measures.
    SqliteDelivery b(env, m, broker.Next(), std::chrono::seconds(30));
    // B's wait is on the trace before AwaitBlocked returns (its connection records the wait,
    // then tells), so the kill, stamped after, is drawn after B blocked; and before B went
    // on, which only A's death allowed.
    b.AwaitBlocked();
    const auto killed_at = Steady::now();
    a.End();
    killed = b.Finish();
    const std::optional<int> status = a.Reap();
    NoteProcess(env, a.pid(), "died",
                fmt::format("pid {} {}", a.pid(), ChildAtHook::HowItEnded(status)), killed_at);
    if (killed.waited && b.resumed != SteadyTime{})
      killed.after_event_ms = MsBetween(killed_at, b.resumed);
    broker.Settle(killed);
  }
  const int64_t reserved_killed = CurrentStock(env, dune).reserved;

  env.recorder.BeginPart("hung: A is SIGSTOPped with its transaction open");
  dune = Restock(env);
  m = NewOrder(env, dune);
  Attempt hung, redelivered;
  {
    HalfBroker broker(env, m);
    ChildAtHook a(env, "A", "BeforeCommit", Holder(env, m, std::chrono::milliseconds(0)), nullptr,
                  ChildAtHook::Ending::kSigkill);
    if (!a.AwaitHook()) throw DatabaseError("hung-consumer: A ended before BeforeCommit");
    if (!a.Stop()) throw DatabaseError("hung-consumer: A ended instead of stopping (SIGSTOP)");
    NoteProcess(env, a.pid(), "stopped", fmt::format("pid {} stopped by SIGSTOP", a.pid()));
    {
      SqliteDelivery b(env, m, broker.Next(), busy_timeout);
      hung = b.Finish();
    }
    broker.Settle(hung);
    // Nothing ends a stopped SQLite writer's transaction but its death: kill it, then the
    // broker's redelivery.
    const auto killed_at = Steady::now();
    a.End();
    const std::optional<int> status = a.Reap();
    NoteProcess(env, a.pid(), "died",
                fmt::format("pid {} {}", a.pid(), ChildAtHook::HowItEnded(status)), killed_at);
    if (!hung.sqlstate.empty()) {
      SqliteDelivery c(env, m, broker.Next(), busy_timeout);
      redelivered = c.Finish();
      broker.Settle(redelivered);
    }
  }
  const StockItem after = CurrentStock(env, dune);

  out.figures["killed"] = ToJson(killed);
  out.figures["killedReserved"] = reserved_killed;
  out.figures["busyTimeoutMs"] = busy_timeout.count();
  out.figures["hung"] = ToJson(hung);
  out.figures["freedBy"] = hung.sqlstate.empty() ? "none" : "busy timeout";
  if (!hung.sqlstate.empty()) out.figures["redelivered"] = ToJson(redelivered);
  out.figures["reserved"] = after.reserved;
  // The waits' milliseconds are in the JSON (killed.afterKillMs, hung.waitMs); the line
  // says what happened, the same on every run.
  std::string hung_phrase =
      hung.sqlstate.empty()
          ? fmt::format("B waited, processed: {}", CsBool(hung.processed))
          : fmt::format(
                "B gave up at its busy timeout (SQLite {}); nothing frees the file while A "
                "lives: A killed, redelivered, processed: {}",
                hung.sqlstate, CsBool(redelivered.processed));
  out.line = fmt::format(
      "{}A killed -> B {} the kill, processed: {}; A hung -> {}; {}", TagColumn("hung-consumer"),
      killed.waited ? "waited until" : "did not wait for", CsBool(killed.processed), hung_phrase,
      JudgedReserved(after.title, after.reserved, o.quantity));
  return out;
}

Outcome Run(ScenarioEnv& env) { return OnServer(env) ? RunOnServer(env) : RunOnSqlite(env); }

nlohmann::ordered_json Expected(const RunOptions& o) {
  // Whatever frees B, the order takes effect once.
  return {{"reserved", o.quantity}};
}

}  // namespace
}  // namespace hung_consumer_file

const Scenario kHungConsumerScenario{
    .name = "hung-consumer",
    .tag = "hung-consumer",
    .summary = "a killed consumer frees its key at once; a hung one holds it until a timeout",
    .traits = kHasServerTimeouts | kAnyBackend,
    .run = &hung_consumer_file::Run,
    .expected = &hung_consumer_file::Expected,
    .lesson =
        "Consumer A claims the message's key and reserves the stock, and then stands at "
        "BeforeCommit with its transaction open, in a child process. B, the redelivery of the "
        "same message, claims the same key and waits.\n"
        "\n"
        "First A is killed (SIGKILL). The database learns of it from the connection itself: "
        "PostgreSQL sees the socket close, ends A's backend and rolls its transaction back; "
        "SQLite's lock goes with the process's file locks. B's INSERT goes on soon after (on "
        "SQLite about a millisecond later; on PostgreSQL some milliseconds, once the server "
        "has seen the close: the line says how long it was) and B processes the message.\n"
        "\n"
        "Then A hangs instead (SIGSTOP): its process is alive, its connection open, its "
        "transaction idle. Nothing tells the database that A will never commit, so B waits "
        "until a timeout frees it. On PostgreSQL, idle_in_transaction_session_timeout on A's "
        "session (--idle-timeout-ms) makes the server end A's session, and B goes on; or "
        "lock_timeout on B (--lock-timeout-ms) makes B give up with 55P03, and the broker "
        "redelivers the message later. On SQLite there is no such timeout: B's busy timeout "
        "gives up, and the file stays locked for as long as A lives. Set timeouts on the "
        "holder's side too: a consumer's own lock wait cannot free a key someone else holds.",
    .hook_points = "BeforeCommit: A stands there (then is killed, or stopped) with its claim open",
    .try_next =
        "Let B give up before the server ends A's session, and watch the redelivery:\n"
        "  dedupsim run hung-consumer --backend postgres --lock-timeout-ms 300 --trace",
};
const LessonRegistration kHungConsumerLesson{kHungConsumerScenario,
                                             {.rank = 350, .theme = Theme::kConcurrency}};

}  // namespace dedupsim
