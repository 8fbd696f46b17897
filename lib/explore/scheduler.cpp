#include "explore/scheduler.h"

#include <fmt/format.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sqlite3.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <set>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "consumers/email.h"
#include "core/clock.h"
#include "core/hooks.h"
#include "core/input_error.h"
#include "explore/step_label.h"
#include "postgres/connection.h"
#include "postgres/error.h"
#include "postgres/store.h"
#include "sqlite/error.h"
#include "sqlite/sandbox.h"
#include "sqlite/schema.h"
#include "sqlite/statement.h"

namespace dedupsim::explore {

namespace {

// A one-shot signal between two threads: Post lets exactly one Wait through. A futex word,
// so a hand-off costs one wake and one wait, with no mutex for the woken thread to take.
// The atomic's release/acquire orders everything the poster wrote before the waiter reads.
class Signal {
 public:
  void Post() {
    word_.store(1, std::memory_order_release);
    syscall(SYS_futex, &word_, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  }
  void Wait() {
    while (word_.exchange(0, std::memory_order_acquire) == 0) {
      syscall(SYS_futex, &word_, FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
    }
  }

 private:
  std::atomic<uint32_t> word_{0};
};

// The one permission to run. Whoever holds it runs; everyone else waits on their own
// signal, so a hand-off wakes exactly one thread. Every change to shared state happens
// while holding the baton; the signals order those changes.
class Baton {
 public:
  explicit Baton(size_t workers) : workers_(workers) {}

  // Scheduler: gives the baton to worker and waits until it is handed back.
  void Give(int worker) {
    workers_[Slot(worker)].Post();
    scheduler_.Wait();
  }

  // Worker: hands the baton back and waits until it is given again.
  void Yield(int worker) {
    scheduler_.Post();
    workers_[Slot(worker)].Wait();
  }

  // Worker: waits for the baton (between runs).
  void Await(int worker) { workers_[Slot(worker)].Wait(); }

  // Worker: hands the baton back and goes on without it (to Await, or to exit).
  void Return() { scheduler_.Post(); }

 private:
  static size_t Slot(int worker) { return static_cast<size_t>(worker); }

  Signal scheduler_;
  std::vector<Signal> workers_;
};

enum class WorkerState { kIdle, kWaiting, kAtGate, kBlocked, kRunning, kDone };

// What the deliveries of one (order, subscriber) pair came to.
struct Tally {
  bool acked = false;
  bool flagged = false;
  bool given_up = false;  // a delivery of it was refused on the broker's last attempt
};

const TimePoint kEpoch =
    std::chrono::sys_days{std::chrono::year{2026} / 1 / 5} + std::chrono::hours{9};

// The plan's books, or one per order when it names none (Dune, Solaris ...: 10 on hand,
// none reserved).
std::vector<BookRow> BooksOf(const Plan& p) {
  if (!p.books.empty()) {
    for (const LogicalOrder& order : p.orders) {
      if (std::none_of(p.books.begin(), p.books.end(),
                       [&](const BookRow& b) { return b.book_id == order.book_id; })) {
        throw std::logic_error("a plan's order names a book the plan does not stock");
      }
    }
    return p.books;
  }
  static constexpr const char* kTitles[] = {"Dune", "Solaris", "Hyperion", "Foundation"};
  std::vector<BookRow> books;
  for (const LogicalOrder& order : p.orders) {
    if (std::any_of(books.begin(), books.end(),
                    [&](const BookRow& b) { return b.book_id == order.book_id; }))
      continue;
    books.push_back({order.book_id, kTitles[books.size() % 4], 10, 0});
  }
  return books;
}

constexpr uint8_t kMainFile = 1;
constexpr uint8_t kAuxFile = 2;

// What a statement about to run will touch, from its label (StepLabel): see Footprint.
Footprint StatementFootprint(const std::string& label, uint8_t file) {
  Footprint f;
  if (label == "BEGIN") return f;  // deferred: no lock until its first statement
  if (label.starts_with("SELECT")) {
    f.reads = file;
  } else {
    f.writes = file;
  }
  return f;
}

// On PostgreSQL a footprint has a bit per table: the server locks rows, not the file.
constexpr uint8_t kEveryTable = 0xFF;

uint8_t TableBit(std::string_view table) {
  if (table == "StockItems") return 1;
  if (table == "Inbox") return 2;
  if (table == "InboxByMessageId") return 4;
  if (table == "StockReservations") return 8;
  return kEveryTable;  // a table the explorer does not know: depends on everything
}

// What a PostgreSQL statement about to run will touch: its table (read or written); a
// COMMIT or ROLLBACK ends a transaction that may have touched any table: every table.
Footprint PgStatementFootprint(const std::string& label) {
  Footprint f;
  if (label == "BEGIN") return f;  // takes no lock; the snapshot comes with the first statement
  size_t gap = label.find(' ');
  std::string op = label.substr(0, gap);
  uint8_t table = gap == std::string::npos ? kEveryTable : TableBit(label.substr(gap + 1));
  if (op == "SELECT") {
    f.reads = table;
  } else {
    f.writes = table;
  }
  return f;
}

// The statements of a script, each as its own text, so each can be prepared once.
std::vector<std::string> SplitScript(Connection& connection, const char* script) {
  std::vector<std::string> out;
  if (script == nullptr) return out;
  const char* rest = script;
  while (*rest != '\0') {
    sqlite3_stmt* stmt = nullptr;
    const char* tail = nullptr;
    int rc = sqlite3_prepare_v2(connection.handle(), rest, -1, &stmt, &tail);
    if (rc != SQLITE_OK) {
      throw SqliteError(
          rc, fmt::format("prepare failed: {} in: {}", sqlite3_errmsg(connection.handle()), rest));
    }
    if (stmt != nullptr) {
      out.emplace_back(sqlite3_sql(stmt));
      sqlite3_finalize(stmt);
    }
    if (tail == nullptr || tail == rest) break;
    rest = tail;
  }
  return out;
}

// The CPU the scheduler and its instances share, or -1 to leave them where they are.
int ChooseCpu() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (pthread_getaffinity_np(pthread_self(), sizeof allowed, &allowed) != 0) return -1;
  if (CPU_COUNT(&allowed) <= 1) return -1;  // already on one CPU
  int here = sched_getcpu();
  if (here >= 0 && here < CPU_SETSIZE && CPU_ISSET(static_cast<size_t>(here), &allowed))
    return here;
  for (size_t cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) return static_cast<int>(cpu);
  }
  return -1;
}

bool PinThread(pthread_t thread, int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(static_cast<size_t>(cpu), &one);
  return pthread_setaffinity_np(thread, sizeof one, &one) == 0;
}

// Puts the calling thread on cpu for its lifetime, then back where it was allowed to run.
class PinCaller {
 public:
  explicit PinCaller(int cpu) {
    if (cpu < 0) return;
    CPU_ZERO(&saved_);
    if (pthread_getaffinity_np(pthread_self(), sizeof saved_, &saved_) != 0) return;
    pinned_ = PinThread(pthread_self(), cpu);
  }
  ~PinCaller() {
    if (pinned_) pthread_setaffinity_np(pthread_self(), sizeof saved_, &saved_);
  }
  PinCaller(const PinCaller&) = delete;
  PinCaller& operator=(const PinCaller&) = delete;

 private:
  cpu_set_t saved_;
  bool pinned_ = false;
};

}  // namespace

bool Independent(const Footprint& a, const Footprint& b) {
  if (a.all || b.all) return false;
  return (a.writes & (b.reads | b.writes)) == 0 && (b.writes & a.reads) == 0;
}

class Worker;

struct Scheduler::Impl {
  Impl(std::span<const Strategy* const> strategies, SchedulerOptions options);
  ~Impl();

  void Reset(const Plan& plan);
  void ResetPostgres(const Plan& plan);
  // Lets every PostgreSQL instance whose statement waits in the server look again, until
  // each is either still waiting or has its answer (the blocker committed or rolled back).
  void Settle(int except);
  void Abort();
  struct ResetSql;
  const ResetSql& ResetOf(const Strategy* s);
  Figures Measure(const Plan& plan, ScheduleResult& result);
  std::vector<BookRow> ReadBooks();  // StockItems as it is now, by BookId
  void RecordResult(const Delivery& delivery, DeliveryResult r);
  void RecordGivenUp(const Delivery& delivery);
  // A plan with one instance: what the books moved by during the attempt that just ended is
  // that delivery's (its order's, its subscriber's).
  void AfterAttempt(const Delivery& delivery);
  size_t TallySlot(const Delivery& delivery) const;

  SchedulerOptions options;
  std::vector<const Strategy*> strategies;
  DatabaseFile db;
  std::optional<DatabaseFile> aux_db;
  Connection control;  // set-up and read-back; never scheduled
  std::optional<PgConnection> pg_control;  // the same on PostgreSQL
  // PostgreSQL: the Inbox rows, read by ReadBooks with the books (one round trip).
  int64_t pg_inbox_rows = 0;
  std::optional<Connection> aux_control;
  Baton baton{kMaxInstances};
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<std::thread> threads;
  int cpu = -1;  // where every thread runs while a plan runs; -1: anywhere

  // Each strategy's reset scripts, split into statements prepared once on the controls.
  struct ResetSql {
    std::vector<std::string> main;
    std::vector<std::string> aux;
  };
  std::unordered_map<const Strategy*, ResetSql> reset_sql;

  // Per run; touched only by the baton holder.
  const Plan* plan = nullptr;
  bool abort = false;
  std::optional<std::chrono::steady_clock::time_point> deadline;  // StopAt
  // What the deliveries sent: the message they handled, and the subscriber that did.
  struct Sent {
    std::string message_id;
    const Strategy* subscriber = nullptr;
  };
  std::vector<Sent> sent;       // emails the counting provider accepted
  std::vector<Sent> published;  // messages published to the broker
  std::unordered_map<std::string, size_t> order_of_message;
  std::vector<BookRow> books;  // the StockItems rows the plan started with
  // One instance only: Reserved as the last attempt left it, and per tally slot what each
  // book moved by during that slot's deliveries.
  std::map<std::string, int64_t> reserved_now;
  std::vector<std::map<std::string, int64_t>> moved;
  TimePoint start;             // the plan's start on the clock
  std::vector<Tally> tallies;  // orders x subscribers
  int64_t crashes = 0;
  int64_t attempts = 0;
  int stale_refusals = 0;  // ScheduleResult::stale_refusals of the run under way
  std::string failure;  // a consumer failed in a way the explorer does not model
  // ... because its input is at fault (a consumer file's statement past its budget) or the
  // machine is (a full disk: StoreErrorKind::kEnvironment): the error itself, rethrown as it
  // is, never reported as the explorer's own failure nor taken for a consumer's refusal.
  std::exception_ptr input_failure;

  [[noreturn]] void ThrowFailure() const {
    if (input_failure) std::rethrow_exception(input_failure);
    throw std::logic_error(failure);
  }
};

// One consumer instance: a thread, its connections, and the gate they call.
class Worker final : public StepGate, public PgStepGate {
 public:
  Worker(Scheduler::Impl& owner, int index)
      : owner_(owner), index_(index), name_(InstanceName(index)) {}

  // Scheduler side, while the worker waits for the baton.
  void Assign(const InstanceScript* script, Recorder* recorder) {
    script_ = script;
    recorder_ = recorder;
    state_ = script ? WorkerState::kWaiting : WorkerState::kIdle;
    blocked_at_ = 0;
    touched_at_ = 0;
    delivery_ = {};
    attempt_seq_ = 0;
    released_ = false;
  }
  void Quit() { quit_ = true; }

  WorkerState state() const { return state_; }
  const std::string& pending() const { return pending_; }
  const std::string& name() const { return name_; }
  bool crashed_last_step() const { return crashed_now_; }
  // Blocked as a redelivery that waits for a lock to be released (not a statement's retry).
  bool redelivery_wait() const { return redelivery_wait_; }
  // The run's delivery attempt (1 for its first) the step it waits to take belongs to.
  int64_t attempt_seq() const { return attempt_seq_; }
  // The files on which one of its connections holds the write lock (SQLite; 0 on PostgreSQL).
  // Read by the scheduler while the worker is parked.
  uint8_t WriteLocks() const {
    if (pg_) return 0;
    auto holds = [](const std::optional<Connection>& c) {
      return c && c->is_open() && sqlite3_txn_state(c->handle(), nullptr) == SQLITE_TXN_WRITE;
    };
    return static_cast<uint8_t>((holds(db_) ? kMainFile : 0) | (holds(aux_) ? kAuxFile : 0));
  }

  void clear_crashed() { crashed_now_ = false; }
  // Another instance's connection holds the write lock on file (read while they are parked).
  bool AnotherHoldsWriteLock(uint8_t file) const;
  int64_t blocked_at() const { return blocked_at_; }
  uint8_t blocked_file() const { return blocked_file_; }
  void set_blocked_at(int64_t progress) { blocked_at_ = progress; }
  // Steps on its file when it found the file locked (kAfterRelease's fallback).
  int64_t touched_at() const { return touched_at_; }
  void set_touched_at(int64_t touched) { touched_at_ = touched; }
  void MarkDone() { state_ = WorkerState::kDone; }
  bool released() const { return released_; }
  void set_settling(bool on) { settling_ = on; }
  const Footprint& footprint() const { return footprint_; }

  void Main() {
    for (;;) {
      owner_.baton.Await(index_);
      if (quit_) break;
      state_ = WorkerState::kRunning;
      RunScript();
      state_ = WorkerState::kDone;
      owner_.baton.Return();
    }
    db_.reset();
    aux_.reset();
    pg_.reset();
    owner_.baton.Return();
  }

  // PgStepGate: the same steps on a PostgreSQL connection.
  void BeforeStatement(PgConnection&, std::string_view sql) override {
    std::string label = StepLabel(sql);
    next_footprint_ = PgStatementFootprint(label);
    Arrive(label, true);
  }
  void BeforeHook(PgConnection&, std::string_view name) override {
    next_footprint_ = Footprint{};
    Arrive(std::string(name), false);
  }
  // The server shows the statement waiting for a lock another backend holds. It stays
  // blocked (its statement still in the server) until Settle finds it has its answer.
  // (The connection notes the wait on the trace, with the server's words.)
  bool Blocked(PgConnection&) override {
    if (dead_ || owner_.abort) {
      dead_ = true;
      return false;
    }
    state_ = WorkerState::kBlocked;
    released_ = false;
    footprint_.all = true;  // what it does once released depends on who released it
    owner_.baton.Yield(index_);
    if (owner_.abort) {
      dead_ = true;  // cancelled: the statement fails, nothing more runs
      return false;
    }
    return true;  // Settle: look again
  }
  // The statement has its answer after a wait; the step is taken when the scheduler picks
  // this instance again.
  void Released(PgConnection&) override {
    released_ = true;
    owner_.baton.Yield(index_);
    released_ = false;
    footprint_ = Footprint{.all = true};  // the resumed statement's effect
    state_ = WorkerState::kRunning;
  }

  // StepGate: every statement and hook is a step the scheduler hands out.
  void BeforeStatement(Connection& c, std::string_view sql) override {
    std::string label = StepLabel(sql);
    last_file_ = aux_ && &c == &*aux_ ? kAuxFile : kMainFile;
    next_footprint_ = StatementFootprint(label, last_file_);
    Arrive(label, true);
  }
  // RunHook notes a crash at a hook itself.
  void BeforeHook(Connection&, std::string_view name) override {
    next_footprint_ = Footprint{};
    Arrive(std::string(name), false);
  }
  bool OnBusy(Connection& c, int) override {
    if (dead_ || owner_.abort) return false;
    state_ = WorkerState::kBlocked;
    Note("wait", current_ + ": the database is locked; blocked until scheduled again", "busy");
    blocked_file_ = aux_ && &c == &*aux_ ? kAuxFile : kMainFile;
    const bool any_step = owner_.options.retry == RetryRule::kAfterAnyStep;
    // Ends blocked. Under kAfterAnyStep when it may retry depends on every other step;
    // under kAfterStepOnItsFile only on the steps on that file.
    if (any_step) {
      footprint_.all = true;
    } else {
      footprint_.writes |= blocked_file_;
    }
    owner_.baton.Yield(index_);
    footprint_ = any_step ? Footprint{.all = true} : Footprint{.writes = blocked_file_};  // a retry
    state_ = WorkerState::kRunning;
    if (!owner_.abort) return true;  // retry the statement
    dead_ = true;                    // the statement fails with SQLITE_BUSY; nothing more runs
    return false;
  }

  // Parks until the scheduler picks this instance to take the step `label`, then lets it
  // run, or dies there when it is this attempt's crash point. Called by the gate methods
  // above, and directly for a step that is neither a statement nor a hook (an email send).
  void Arrive(const std::string& label, bool note_crash) {
    // Unwinding after a crash (a Transaction's destructor rolling back): a dead process
    // runs nothing more.
    if (dead_) throw SimulatedCrash(label);
    // A redelivery after the database refused a write for a lock another instance holds
    // waits, like a blocked statement, until that lock is released: the broker's
    // redelivery comes later than a transaction lasts.
    if (awaits_release_ && !AnotherHoldsWriteLock(blocked_file_)) awaits_release_ = false;
    state_ = awaits_release_ ? WorkerState::kBlocked : WorkerState::kAtGate;
    redelivery_wait_ = awaits_release_;
    awaits_release_ = false;
    pending_ = label;
    owner_.baton.Yield(index_);
    redelivery_wait_ = false;
    state_ = WorkerState::kRunning;
    footprint_ = next_footprint_;
    next_footprint_ = Footprint{};
    current_ = label;
    if (owner_.abort) {
      dead_ = true;
      throw SimulatedCrash("abort");
    }
    ++steps_in_attempt_;
    if ((!crash_at_.empty() && crash_at_ == label) ||
        (crash_step_ > 0 && steps_in_attempt_ == crash_step_)) {
      crash_at_.clear();
      crash_step_ = 0;
      dead_ = true;
      crashed_now_ = true;
      footprint_.writes |= OpenFiles();  // closing ends its transaction, releases its locks
      if (note_crash) Note("crash", label, "SimulatedCrash thrown");
      throw SimulatedCrash(label);
    }
  }

 private:
  // Sends go through the gate: the instance may crash just before the provider accepts.
  class GatedProvider final : public EmailProvider {
   public:
    explicit GatedProvider(Worker& worker) : worker_(worker) {}
    void Send(const std::string& idempotency_key, const std::string&) override {
      worker_.next_footprint_ = Footprint{};  // the provider's count: order does not matter
      worker_.Arrive("EmailProvider.Send", true);
      worker_.owner_.sent.push_back({idempotency_key, worker_.subscriber_});
    }

   private:
    Worker& worker_;
  };

  // Stamped with the delivery attempt it belongs to (the message and the broker's number
  // of this delivery), as the connections stamp their statements.
  void Note(const std::string& kind, const std::string& detail, const std::string& result) {
    if (recorder_ == nullptr) return;
    TraceEvent e;
    e.instance = name_;
    e.pid = static_cast<int>(getpid());
    e.actor = kActorConsumer;
    e.key = delivery_.key;
    e.delivery = delivery_.number;
    RecordNote(*recorder_, std::move(e), kind, detail, result);
  }

  Connection OpenGated(const DatabaseFile& file) {
    Connection c = file.Connect();
    c.SetGate(this);
    return c;
  }

  void EnsureOpen(const Strategy& subscriber) {
    if (owner_.options.postgres != nullptr) {
      if (!pg_ || !pg_->connection().is_open()) {
        pg_ =
            std::make_unique<PgStore>(owner_.options.postgres->Connect(), owner_.options.isolation);
        pg_->connection().WatchWaits(owner_.options.postgres->conninfo());
        pg_->connection().SetGate(this);
      }
      pg_->connection().SetTrace(recorder_, name_);
      return;
    }
    if (!db_ || !db_->is_open()) {
      db_.emplace(OpenGated(owner_.db));
      db_->SetGate(this);  // the move rebinds the busy handler; the gate goes with it
    }
    db_->SetTrace(recorder_, name_);
    if (subscriber.aux_schema != nullptr && owner_.aux_db) {
      if (!aux_ || !aux_->is_open()) {
        aux_.emplace(OpenGated(*owner_.aux_db));
        aux_->SetGate(this);
      }
      aux_->SetTrace(recorder_, name_);
      if (recorder_ != nullptr) aux_->SetTraceRole(kActorConsumer, subscriber.aux_target);
    }
  }

  uint8_t OpenFiles() const {
    if (pg_) return pg_->connection().is_open() ? kEveryTable : 0;
    return static_cast<uint8_t>((db_ && db_->is_open() ? kMainFile : 0) |
                                (aux_ && aux_->is_open() ? kAuxFile : 0));
  }

  void CloseAll() {
    // A dead process's backend rolls back when the server sees the socket close; wait for
    // it, so its locks are gone before another instance moves.
    if (pg_) pg_->connection().CloseAndAwaitExit();
    if (db_) db_->Close();
    if (aux_) aux_->Close();
  }

  // The run is abandoned (no verdict; the next one starts from a reset): on PostgreSQL the
  // connection is kept, its transaction rolled back, as a connection kept after a finished
  // run is (a statement that waited was cancelled on the way here). Reconnecting cost a new
  // backend and a new side connection per instance per abandoned run. Anything unexpected
  // closes it, as a crash does.
  void Unwind() {
    if (pg_ && pg_->connection().is_open()) {
      try {
        pg_->connection().ExecScript("ROLLBACK");
        if (!pg_->InTransaction()) return;
      } catch (const std::exception&) {
      }
    }
    CloseAll();
  }

  static std::string Short(const std::string& id) { return id.substr(0, 8); }

  void RunScript() {
    if (!owner_.options.reuse_connections) {
      db_.reset();
      aux_.reset();
    }
    for (const Delivery& d : script_->deliveries) {
      for (int attempt = 1;; ++attempt) {
        if (!Attempt(d, attempt)) return;  // aborted
        owner_.AfterAttempt(d);
        if (done_) break;
      }
    }
  }

  // One delivery attempt. Sets done_ when the message needs no more deliveries; returns
  // false when the run is being aborted.
  bool Attempt(const Delivery& d, int attempt) {
    done_ = false;
    dead_ = false;
    EnsureOpen(*d.subscriber);
    size_t slot = static_cast<size_t>(attempt - 1);
    crash_at_ = slot < d.crash_at.size() ? d.crash_at[slot] : "";
    crash_step_ = slot < d.crash_step.size() ? d.crash_step[slot] : 0;
    steps_in_attempt_ = 0;
    subscriber_ = d.subscriber;
    // This attempt's own clock: when the broker handed it over. No other step moves it.
    clock_.Set(owner_.start + d.arrives_after + (attempt - 1) * d.redelivered_after);
    owner_.attempts++;
    attempt_seq_ = owner_.attempts;
    delivery_ = DeliveryRef{d.message.message_id, attempt};
    if (recorder_ != nullptr) {
      if (db_) db_->SetDelivery(delivery_);
      if (aux_) aux_->SetDelivery(delivery_);
      if (pg_) pg_->connection().SetDelivery(delivery_);
    }
    Note("deliver",
         fmt::format("message {} (order {}) to {}, attempt {}", Short(d.message.message_id),
                     Short(d.message.order_id), d.subscriber->name, attempt),
         "");
    try {
      GatedProvider provider(*this);
      DeliveryResult r = DeliveryResult::kProcessed;
      bool open_transaction = false;
      if (pg_) {
        StoreContext context{*pg_, clock_, provider,
                             [this](const std::string&, const OrderPlaced& m) {
                               owner_.published.push_back({m.message_id, subscriber_});
                             }};
        r = d.subscriber->handle_store(context, d.message);
        open_transaction = pg_->InTransaction();
      } else {
        DeliveryContext context{*db_, aux_ && aux_->is_open() ? &*aux_ : nullptr, clock_,
                                provider,
                                [this](const std::string&, const OrderPlaced& m) {
                                  owner_.published.push_back({m.message_id, subscriber_});
                                }};
        r = d.subscriber->handle(context, d.message);
        open_transaction = db_->InTransaction();
      }
      if (open_transaction) {
        throw std::logic_error(
            fmt::format("strategy {} returned with a transaction still open", d.subscriber->name));
      }
      owner_.RecordResult(d, r);
      Note("ack", std::string(ToString(r)), d.ack_lost ? "lost" : "ok");
      done_ = true;
      return true;
    } catch (const SimulatedCrash&) {
      if (owner_.abort) {
        Unwind();
        dead_ = false;
        return false;
      }
      CloseAll();
      dead_ = false;
      owner_.crashes++;
      // The thread threw (the post's crash by exception); its connection is closed without a
      // commit, as a dead process's would be, and the broker delivers the message again.
      Note("redeliver",
           "SimulatedCrash thrown: the connection closed without a commit; delivered again", "");
      return true;
    } catch (const StoreError& e) {  // SQLite's and PostgreSQL's refusals
      if (e.kind() == StoreErrorKind::kEnvironment) {
        CloseAll();
        if (owner_.failure.empty()) {
          owner_.failure = e.what();
          owner_.input_failure = std::current_exception();
        }
        return false;
      }
      return Refused(d, e, attempt);
    } catch (const DeliveryFailed& e) {
      return Refused(d, e, attempt);
    } catch (const InputError& e) {
      CloseAll();
      if (owner_.failure.empty()) {
        owner_.failure = e.what();
        owner_.input_failure = std::current_exception();
      }
      return false;
    } catch (const std::exception& e) {
      CloseAll();
      if (owner_.failure.empty()) {
        owner_.failure = fmt::format("instance {} ({}): {}", name_, d.subscriber->name, e.what());
      }
      return false;
    }
  }

  // The database refused the delivery, or the consumer gave up on it: not acked, and the
  // broker redelivers it, up to max_attempts.
  bool Refused(const Delivery& d, const std::exception& e, int attempt) {
    if (owner_.abort) {
      Unwind();
      return false;
    }
    const bool given_up = attempt >= owner_.options.max_attempts;
    const bool thrown = dynamic_cast<const DeliveryFailed*>(&e) != nullptr;
    Note("error", e.what(),
         std::string(thrown ? "thrown, " : "") + "not acked" + (given_up ? ", given up" : ""));
    // SQLite's plain SQLITE_BUSY with no busy handler called: a deferred transaction that
    // had read could not take the write lock another instance holds. Its redelivery waits
    // for that lock (Arrive). A stale snapshot (517) needs no wait: the writer has committed.
    const auto* store = dynamic_cast<const StoreError*>(&e);
    if (!pg_ && store != nullptr &&
        (store->backend_code() == "5" || store->backend_code() == "517")) {
      ++owner_.stale_refusals;
    }
    if (!pg_ && store != nullptr && store->backend_code() == "5") {
      awaits_release_ = true;
      blocked_file_ = last_file_;
      footprint_.writes |= last_file_;
      if (owner_.options.retry == RetryRule::kAfterAnyStep) footprint_.all = true;
    }
    if (given_up) {  // never acked: dead-lettered
      done_ = true;
      owner_.RecordGivenUp(d);
    }
    return true;
  }

  Scheduler::Impl& owner_;
  const int index_;
  const std::string name_;
  const InstanceScript* script_ = nullptr;
  Recorder* recorder_ = nullptr;
  DeliveryRef delivery_;     // the attempt under way: message and the broker's number
  int64_t attempt_seq_ = 0;  // the run's count of attempts when it started
  std::optional<Connection> db_;
  std::optional<Connection> aux_;
  std::unique_ptr<PgStore> pg_;  // on PostgreSQL, instead of db_ and aux_
  WorkerState state_ = WorkerState::kIdle;
  std::string pending_;       // the step it waits to take
  std::string current_;       // the step it is taking
  std::string crash_at_;      // where this attempt dies, or ""
  int crash_step_ = 0;        // before which of its steps this attempt dies (1-based), or 0
  bool awaits_release_ = false;  // its next attempt waits for a lock to be released
  bool redelivery_wait_ = false;  // blocked, as the redelivery that awaits a release
  uint8_t last_file_ = kMainFile;  // the file of its last statement
  int steps_in_attempt_ = 0;  // steps this attempt has arrived at so far
  const Strategy* subscriber_ = nullptr;  // the consumer of the delivery under way
  ManualClock clock_{TimePoint{}};  // this attempt's :Now
  Footprint next_footprint_;  // what the step it waits to take will touch
  Footprint footprint_;       // what the step it is taking touched so far
  bool dead_ = false;         // crashed: unwinding, nothing more runs
  bool crashed_now_ = false;
  bool done_ = false;
  bool quit_ = false;
  int64_t blocked_at_ = 0;    // progress count when it found the database locked
  int64_t touched_at_ = 0;    // steps on its file then
  uint8_t blocked_file_ = 0;  // the file it found locked
  bool released_ = false;     // PostgreSQL: its waiting statement has its answer
  bool settling_ = false;
};

bool Worker::AnotherHoldsWriteLock(uint8_t file) const {
  for (const auto& other : owner_.workers) {
    if (other.get() != this && (other->WriteLocks() & file) != 0) return true;
  }
  return false;
}

Scheduler::Impl::Impl(std::span<const Strategy* const> list, SchedulerOptions opts)
    : options(opts),
      strategies(list.begin(), list.end()),
      db(DatabaseFile::CreateTemporary(
          DatabaseSettings{opts.journal, opts.synchronous, std::chrono::milliseconds(2000)})),
      control(db.Connect()) {
  bool any_aux = false;
  for (const Strategy* s : strategies) {
    if (s->schema != nullptr) RunSchema(control, s->schema, {});  // a file's: sandboxed
    if (s->aux_schema != nullptr) any_aux = true;
  }
  if (any_aux) {
    aux_db.emplace(DatabaseFile::CreateTemporary(
        DatabaseSettings{opts.journal, opts.synchronous, std::chrono::milliseconds(2000)}));
    aux_control.emplace(aux_db->Connect());
    for (const Strategy* s : strategies) {
      if (s->aux_schema != nullptr) aux_control->ExecScript(s->aux_schema);
    }
  }
  for (int i = 0; i < kMaxInstances; ++i) {
    workers.push_back(std::make_unique<Worker>(*this, i));
  }
  for (const Strategy* s : strategies) {
    ResetSql r;
    r.main = SplitScript(control, s->reset);
    if (aux_control) r.aux = SplitScript(*aux_control, s->aux_reset);
    reset_sql[s] = std::move(r);
  }
  if (options.postgres != nullptr) pg_control.emplace(options.postgres->Connect());
  if (options.one_cpu) cpu = ChooseCpu();
  for (int i = 0; i < kMaxInstances; ++i) {
    threads.emplace_back([w = workers[static_cast<size_t>(i)].get()] { w->Main(); });
    if (cpu >= 0 && !PinThread(threads.back().native_handle(), cpu)) cpu = -1;
  }
}

Scheduler::Impl::~Impl() {
  for (size_t i = 0; i < workers.size(); ++i) {
    workers[i]->Quit();
    baton.Give(static_cast<int>(i));
  }
  for (std::thread& t : threads) t.join();
}

void Scheduler::Impl::Reset(const Plan& p) {
  plan = &p;
  abort = false;
  sent.clear();
  published.clear();
  crashes = 0;
  attempts = 0;
  stale_refusals = 0;
  failure.clear();
  input_failure = nullptr;
  start = p.start.value_or(kEpoch);
  books = BooksOf(p);
  reserved_now.clear();
  for (const BookRow& b : books) reserved_now[b.book_id] = b.reserved;
  moved.assign(p.orders.size() * p.subscribers.size(), {});
  order_of_message.clear();
  for (const InstanceScript& script : p.instances) {
    for (const Delivery& d : script.deliveries) order_of_message[d.message.message_id] = d.order;
  }
  tallies.assign(p.orders.size() * p.subscribers.size(), Tally{});
  if (pg_control) {
    ResetPostgres(p);
    return;
  }
  for (const Strategy* s : p.subscribers) ResetOf(s);  // a strategy met for the first time

  control.Cached("BEGIN IMMEDIATE").Execute();
  control.Cached("DELETE FROM Inbox").Execute();
  control.Cached("DELETE FROM StockItems").Execute();
  for (const BookRow& book : books) {
    control
        .Cached("INSERT INTO StockItems (BookId, Title, OnHand, Reserved) VALUES (?1, ?2, ?3, ?4)")
        .Bind(1, book.book_id)
        .Bind(2, book.title)
        .Bind(3, book.on_hand)
        .Bind(4, book.reserved)
        .Execute();
  }
  // Every known strategy's tables, not only the plan's: a strategy may write tables another
  // one declares (a consumer file reserving through StockReservations), and a table left
  // with a previous plan's rows would change this plan's outcome. The statements are
  // prepared once, so an empty table costs little.
  bool aux_used = false;
  for (const Strategy* s : strategies) {
    const ResetSql& r = reset_sql.at(s);
    for (const std::string& sql : r.main) control.Cached(sql).Execute();
    aux_used = aux_used || !r.aux.empty();
  }
  control.Cached("COMMIT").Execute();
  if (aux_used && aux_control) {
    aux_control->Cached("BEGIN IMMEDIATE").Execute();
    for (const Strategy* s : strategies) {
      for (const std::string& sql : reset_sql.at(s).aux) aux_control->Cached(sql).Execute();
    }
    aux_control->Cached("COMMIT").Execute();
  }
}

// One transaction on the control connection: every table of ours emptied, the books
// restocked. DELETE rather than TRUNCATE: cheaper on tables this small, and it takes row
// locks only, so nothing waits on it. Sent as one script (one round trip, where a
// statement each cost eight: the reset was the largest share of a schedule's round trips).
void Scheduler::Impl::ResetPostgres(const Plan& p) {
  for (const Strategy* s : p.subscribers) {
    if (!s->handle_store) {
      throw std::logic_error(
          fmt::format("strategy {} does not run on PostgreSQL (it has no store adapter)", s->name));
    }
  }
  std::string script =
      "BEGIN; DELETE FROM Inbox; DELETE FROM InboxByMessageId; DELETE FROM StockReservations; "
      "DELETE FROM StockItems;";
  for (const BookRow& book : books) {
    script += fmt::format(
        " INSERT INTO StockItems (BookId, Title, OnHand, Reserved) VALUES ({}, {}, {}, {});",
        QuoteLiteral(book.book_id), QuoteLiteral(book.title), book.on_hand, book.reserved);
  }
  for (const Strategy* s : p.subscribers) {
    if (s->pg_reset != nullptr) script += fmt::format(" {}", s->pg_reset);
  }
  script += " COMMIT";
  pg_control->ExecScript(script);
}

void Scheduler::Impl::Settle(int except) {
  if (!pg_control) return;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < workers.size(); ++i) {
      Worker& w = *workers[i];
      if (static_cast<int>(i) == except || w.state() != WorkerState::kBlocked || w.released())
        continue;
      w.set_settling(true);
      baton.Give(static_cast<int>(i));
      w.set_settling(false);
      changed = changed || w.released();
    }
  }
}

// A strategy the scheduler was not set up with (a test's variant, a consumer read from a
// file) gets its tables on first use, in the scheduler's own temporary files.
const Scheduler::Impl::ResetSql& Scheduler::Impl::ResetOf(const Strategy* s) {
  auto it = reset_sql.find(s);
  if (it != reset_sql.end()) return it->second;
  if (s->aux_schema != nullptr && !aux_control) {
    throw std::logic_error(fmt::format(
        "strategy {} needs a second file, and the scheduler was set up without one", s->name));
  }
  if (s->schema != nullptr) RunSchema(control, s->schema, {});  // a file's: sandboxed
  if (s->aux_schema != nullptr) aux_control->ExecScript(s->aux_schema);
  ResetSql r;
  r.main = SplitScript(control, s->reset);
  if (aux_control) r.aux = SplitScript(*aux_control, s->aux_reset);
  strategies.push_back(s);
  return reset_sql.emplace(s, std::move(r)).first->second;
}

size_t Scheduler::Impl::TallySlot(const Delivery& d) const {
  size_t subscriber = 0;
  while (subscriber < plan->subscribers.size() && plan->subscribers[subscriber] != d.subscriber) {
    ++subscriber;
  }
  if (subscriber == plan->subscribers.size()) {
    throw std::logic_error(
        fmt::format("plan delivers to {}, which is not among its subscribers", d.subscriber->name));
  }
  return d.order * plan->subscribers.size() + subscriber;
}

void Scheduler::Impl::RecordResult(const Delivery& d, DeliveryResult r) {
  Tally& t = tallies[TallySlot(d)];
  t.acked = true;
  if (r == DeliveryResult::kNeedsReconciliation) t.flagged = true;
}

void Scheduler::Impl::RecordGivenUp(const Delivery& d) { tallies[TallySlot(d)].given_up = true; }

void Scheduler::Impl::AfterAttempt(const Delivery& d) {
  if (plan->instances.size() != 1) return;  // others' steps may be in between: not its alone
  std::map<std::string, int64_t>& mine = moved[TallySlot(d)];
  for (const BookRow& b : ReadBooks()) {
    int64_t& before = reserved_now[b.book_id];
    if (b.reserved != before) mine[b.book_id] += b.reserved - before;
    before = b.reserved;
  }
}

void Scheduler::Impl::Abort() {
  abort = true;
  for (;;) {
    bool any = false;
    for (size_t i = 0; i < workers.size(); ++i) {
      Worker& w = *workers[i];
      if (w.state() == WorkerState::kWaiting) {
        w.MarkDone();  // never started: nothing to unwind
      } else if (w.state() == WorkerState::kAtGate || w.state() == WorkerState::kBlocked) {
        baton.Give(static_cast<int>(i));
        any = true;
      }
    }
    if (!any) break;
  }
  abort = false;
}

namespace {

// Shares out what a book's Reserved moved by among the reservations expected on it (the
// quantities, one per order and stock subscriber, each expected once): the counts, one per
// quantity, whose reservations add up to delta exactly, the nearest to once each (the fewest
// reservations missing or repeated; the first found on a tie). nullopt when no whole counts
// add up to it: the book moved by another amount.
std::optional<std::vector<int64_t>> ShareOut(int64_t delta, const std::vector<int64_t>& quantities) {
  std::optional<std::vector<int64_t>> best;
  int64_t best_distance = 0;
  std::vector<int64_t> counts(quantities.size(), 0);
  constexpr int64_t kMostTimes = 8;  // more than any plan delivers one order
  std::function<void(size_t, int64_t, int64_t)> search = [&](size_t i, int64_t left,
                                                               int64_t distance) {
    if (best && distance >= best_distance) return;
    if (i == quantities.size()) {
      if (left == 0) {
        best = counts;
        best_distance = distance;
      }
      return;
    }
    // Once first, then the neighbours: the nearest solution is found early.
    for (int64_t n : {int64_t{1}, int64_t{0}, int64_t{2}, int64_t{3}, int64_t{4}, int64_t{5},
                      int64_t{6}, int64_t{7}, kMostTimes}) {
      if (quantities[i] <= 0 || n * quantities[i] > left) continue;
      counts[i] = n;
      search(i + 1, left - n * quantities[i], distance + (n > 1 ? n - 1 : 1 - n));
    }
    counts[i] = 0;
  };
  if (delta >= 0) search(0, delta, 0);
  return best;
}

// The probe the adapters read their effects through: the subscriber and order being
// measured are set by Measure before it calls the subscriber's `applied`.
class Probe final : public EffectProbe {
 public:
  Probe(Scheduler::Impl& impl, const std::map<std::pair<size_t, size_t>, int64_t>& reserved)
      : impl_(impl), reserved_(reserved) {}
  void Measuring(size_t order, size_t subscriber) {
    order_ = order;
    subscriber_ = subscriber;
  }
  Connection& db() override {
    if (impl_.pg_control) throw std::logic_error("a PostgreSQL run has no SQLite database");
    return impl_.control;
  }
  int64_t ReservedTimes(const LogicalOrder& order) override {
    const LogicalOrder& measured = impl_.plan->orders.at(order_);
    if (measured.order_id != order.order_id) {
      throw std::logic_error("an effect was read for another order than the one measured");
    }
    auto it = reserved_.find({order_, subscriber_});
    return it == reserved_.end() ? 0 : it->second;
  }
  Connection* aux() override { return impl_.aux_control ? &*impl_.aux_control : nullptr; }
  int64_t EmailsSentFor(const LogicalOrder& order) override { return CountFor(impl_.sent, order); }
  int64_t PublishedFor(const LogicalOrder& order) override {
    return CountFor(impl_.published, order);
  }

 private:
  // Entries that belong to a message of the order and were sent by the measured subscriber.
  int64_t CountFor(const std::vector<Scheduler::Impl::Sent>& entries, const LogicalOrder& order) {
    const Strategy* subscriber = impl_.plan->subscribers.at(subscriber_);
    int64_t n = 0;
    for (const Scheduler::Impl::Sent& e : entries) {
      if (e.subscriber != nullptr && e.subscriber != subscriber) continue;
      auto it = impl_.order_of_message.find(e.message_id);
      if (it != impl_.order_of_message.end() &&
          impl_.plan->orders[it->second].order_id == order.order_id)
        ++n;
    }
    return n;
  }

  Scheduler::Impl& impl_;
  const std::map<std::pair<size_t, size_t>, int64_t>& reserved_;
  size_t order_ = 0;
  size_t subscriber_ = 0;
};

}  // namespace

std::vector<BookRow> Scheduler::Impl::ReadBooks() {
  std::vector<BookRow> out;
  if (pg_control) {
    // One round trip for the books and the Inbox rows (a round trip per figure was a fifth
    // of a schedule's); a row of NULLs carries the count when no book is left.
    PgResult rows = pg_control->Exec(
        "SELECT BookId, Title, OnHand, Reserved, (SELECT count(*) FROM Inbox) FROM StockItems "
        "UNION ALL SELECT NULL, NULL, NULL, NULL, (SELECT count(*) FROM Inbox) WHERE NOT EXISTS "
        "(SELECT 1 FROM StockItems) ORDER BY 1");
    pg_inbox_rows = rows.Int(0, 4);
    for (int r = 0; r < rows.rows(); ++r) {
      if (!rows.Get(r, 0)) continue;
      out.push_back({rows.Text(r, 0), rows.Text(r, 1), rows.Int(r, 2), rows.Int(r, 3)});
    }
    return out;
  }
  Statement& q =
      control.Cached("SELECT BookId, Title, OnHand, Reserved FROM StockItems ORDER BY BookId");
  while (q.Step()) {
    out.push_back({q.ColumnText(0), q.ColumnText(1), q.ColumnInt(2), q.ColumnInt(3)});
  }
  q.Reset();
  return out;
}

Figures Scheduler::Impl::Measure(const Plan& p, ScheduleResult& result) {
  Figures f;
  // The books as the run left them, against how they started: each book's Reserved is
  // shared out among the reservations expected on it; a book no order names must not
  // move, and nothing else of a row may change.
  std::vector<BookRow> after = ReadBooks();
  std::map<std::pair<size_t, size_t>, int64_t> reserved;  // (order, subscriber) -> times
  std::vector<std::string> wrong;                          // what moved that should not have
  std::set<std::string> seen;
  for (const BookRow& before : books) {
    seen.insert(before.book_id);
    auto now = std::find_if(after.begin(), after.end(),
                            [&](const BookRow& b) { return b.book_id == before.book_id; });
    std::vector<std::pair<size_t, size_t>> units;
    std::vector<int64_t> quantities;
    for (size_t o = 0; o < p.orders.size(); ++o) {
      if (p.orders[o].book_id != before.book_id) continue;
      for (size_t s = 0; s < p.subscribers.size(); ++s) {
        if (p.subscribers[s]->effect != "stock") continue;
        units.emplace_back(o, s);
        quantities.push_back(p.orders[o].quantity);
        f.reserved_expected += p.orders[o].quantity;
      }
    }
    if (now == after.end()) {
      wrong.push_back(fmt::format("{}'s StockItems row was deleted", before.title));
      for (const auto& u : units) reserved[u] = kNotWhole;
      continue;
    }
    const int64_t delta = now->reserved - before.reserved;
    f.reserved += delta;
    if (now->title != before.title || now->on_hand != before.on_hand) {
      wrong.push_back(fmt::format("{}'s OnHand went from {} to {} (only Reserved is the order's)",
                                  before.title, before.on_hand, now->on_hand));
    }
    if (units.empty()) {
      if (delta != 0) {
        wrong.push_back(fmt::format("{}, which no message names, went from {} to {} reserved",
                                    before.title, before.reserved, now->reserved));
      }
      continue;
    }
    std::optional<std::vector<int64_t>> shares = ShareOut(delta, quantities);
    for (size_t i = 0; i < units.size(); ++i) reserved[units[i]] = shares ? (*shares)[i] : kNotWhole;
    if (!shares) {
      int64_t expected = 0;
      for (int64_t q : quantities) expected += q;
      wrong.push_back(fmt::format(
          "{} went from {} to {} reserved: {} more, which no whole number of its orders' "
          "quantities makes (once each: {})",
          before.title, before.reserved, now->reserved, delta, expected));
    }
  }
  for (const BookRow& now : after) {
    if (seen.count(now.book_id) == 0) {
      wrong.push_back(fmt::format("a StockItems row was added ({})", now.title));
    }
  }
  if (p.instances.size() == 1) {
    // One instance: each delivery's moves are its own. The reservations of an order are what
    // its own deliveries moved its book by; moving another book is no reservation of it.
    for (auto& [unit, times] : reserved) {
      const LogicalOrder& order = p.orders[unit.first];
      int64_t own = 0;
      bool elsewhere = false;
      for (const auto& [book, delta] : moved[unit.first * p.subscribers.size() + unit.second]) {
        if (book == order.book_id) {
          own += delta;
        } else {
          elsewhere = true;
        }
      }
      times = !elsewhere && own >= 0 && own % order.quantity == 0 ? own / order.quantity
                                                                   : kNotWhole;
    }
  }
  Probe probe(*this, reserved);
  const bool decided = result.outcome == Outcome::kDeadlock || result.outcome == Outcome::kError;
  for (size_t o = 0; o < p.orders.size(); ++o) {
    for (size_t s = 0; s < p.subscribers.size(); ++s) {
      const Tally& t = tallies[o * p.subscribers.size() + s];
      probe.Measuring(o, s);
      int64_t applied = p.subscribers[s]->applied(probe, p.orders[o]);
      if (t.flagged) f.flagged++;
      if (!decided) {
        result.outcome =
            Worse(result.outcome, Classify(applied, t.flagged, t.acked, t.given_up));
      }
    }
  }
  if (!wrong.empty() && !decided) {
    result.outcome = Worse(result.outcome, Outcome::kWrong);
    std::string what = fmt::format("{}", fmt::join(wrong, "; "));
    result.note = result.note.empty() ? what : result.note + "; " + what;
  }
  if (pg_control) {
    f.inbox_rows = pg_inbox_rows;
  } else {
    Statement& rows = control.Cached("SELECT count(*) FROM Inbox");
    rows.Step();
    f.inbox_rows = rows.ColumnInt(0);
    rows.Reset();
  }
  f.emails_sent = static_cast<int64_t>(sent.size());
  f.crashes = crashes;
  f.deliveries = attempts;
  return f;
}

Scheduler::Scheduler(std::span<const Strategy* const> strategies, SchedulerOptions options)
    : impl_(std::make_unique<Impl>(strategies, options)) {}

Scheduler::~Scheduler() = default;

const DatabaseFile& Scheduler::database() const { return impl_->db; }

void Scheduler::StopAt(std::optional<std::chrono::steady_clock::time_point> deadline) {
  impl_->deadline = deadline;
}
const DatabaseFile* Scheduler::second_database() const {
  return impl_->aux_db ? &*impl_->aux_db : nullptr;
}
JournalMode Scheduler::journal() const { return impl_->options.journal; }

ScheduleResult Scheduler::Run(const Plan& plan, Chooser& chooser, Recorder* recorder) {
  try {
    return RunUnguarded(plan, chooser, recorder);
  } catch (...) {
    impl_->Abort();  // no instance may stay parked mid-delivery into the next run
    throw;
  }
}

ScheduleResult Scheduler::RunUnguarded(const Plan& plan, Chooser& chooser, Recorder* recorder) {
  Impl& s = *impl_;
  if (plan.instances.size() > s.workers.size()) {
    throw std::logic_error(fmt::format("a plan has {} instances; at most {}", plan.instances.size(),
                                       s.workers.size()));
  }
  PinCaller pin(s.cpu);
  s.Reset(plan);
  for (size_t i = 0; i < s.workers.size(); ++i) {
    s.workers[i]->Assign(i < plan.instances.size() ? &plan.instances[i] : nullptr, recorder);
  }

  ScheduleResult result;
  int64_t progress = 0;  // steps that did not end blocked: a blocked instance may retry after one
  // Under RetryRule::kAfterStepOnItsFile: such steps that touched each file.
  const bool any_step = s.options.retry == RetryRule::kAfterAnyStep;
  const bool postgres = s.pg_control.has_value();
  std::array<int64_t, 2> touched{};
  // Under RetryRule::kAfterRelease: steps that released a write lock held on each file.
  const bool on_release = s.options.retry == RetryRule::kAfterRelease;
  std::array<int64_t, 2> releases{};
  auto released_on = [&](uint8_t files) {
    return ((files & kMainFile) != 0 ? releases[0] : 0) +
           ((files & kAuxFile) != 0 ? releases[1] : 0);
  };
  auto touches = [&](uint8_t files) {
    return ((files & kMainFile) != 0 ? touched[0] : 0) + ((files & kAuxFile) != 0 ? touched[1] : 0);
  };
  auto wait_mark = [&](const Worker& w) {
    if (any_step) return progress;
    return on_release ? released_on(w.blocked_file()) : touches(w.blocked_file());
  };
  auto start_ready = [&] {
    bool started = true;
    while (started) {
      started = false;
      for (size_t i = 0; i < plan.instances.size(); ++i) {
        Worker& w = *s.workers[i];
        int after = plan.instances[i].start_after;
        if (w.state() == WorkerState::kWaiting &&
            (after < 0 || s.workers[static_cast<size_t>(after)]->state() == WorkerState::kDone)) {
          s.baton.Give(static_cast<int>(i));  // runs up to its first step
          started = true;
        }
      }
    }
  };

  for (;;) {
    start_ready();
    uint32_t eligible = 0;
    bool live = false;
    for (size_t i = 0; i < plan.instances.size(); ++i) {
      Worker& w = *s.workers[i];
      switch (w.state()) {
        case WorkerState::kAtGate:
          eligible |= 1u << i;
          live = true;
          break;
        case WorkerState::kBlocked:
          if (w.redelivery_wait()) {
            // The world's rule, under every retry rule: the redelivery comes once no other
            // instance holds the lock its attempt before was refused for.
            if (!w.AnotherHoldsWriteLock(w.blocked_file())) eligible |= 1u << i;
          } else if (postgres ? w.released() : w.blocked_at() < wait_mark(w)) {
            eligible |= 1u << i;
          }
          live = true;
          break;
        case WorkerState::kWaiting:
          live = true;
          break;
        default:
          break;
      }
    }
    if (!s.failure.empty()) {
      s.Abort();
      s.ThrowFailure();
    }
    // Checked between steps: a file's statement itself is held to the sandbox's budget.
    if (s.deadline && std::chrono::steady_clock::now() >= *s.deadline) {
      result.abandoned = true;
      result.out_of_time = true;
      s.Abort();
      return result;
    }
    if (!live) break;
    if (eligible == 0 && on_release) {
      // No lock was seen released; the rule it refines decides whether anyone may move.
      for (size_t i = 0; i < plan.instances.size(); ++i) {
        const Worker& w = *s.workers[i];
        if (w.state() == WorkerState::kBlocked && !w.redelivery_wait() &&
            w.touched_at() < touches(w.blocked_file()))
          eligible |= 1u << i;
      }
    }
    if (eligible == 0) {
      result.outcome = Outcome::kDeadlock;
      result.note = "every live instance waits for a lock another one holds";
      if (recorder != nullptr) recorder->Note("", "deadlock", result.note, "aborted");
      s.Abort();
      break;
    }
    if (result.picks.size() >= s.options.max_steps) {
      result.outcome = Outcome::kError;
      result.note = fmt::format("no end after {} steps", s.options.max_steps);
      s.Abort();
      break;
    }
    std::optional<int> choice = chooser.Choose(result.picks.size(), eligible);
    if (!choice || *choice < 0 || *choice >= kMaxInstances || (eligible & (1u << *choice)) == 0) {
      result.abandoned = true;
      s.Abort();
      return result;
    }
    Worker& w = *s.workers[static_cast<size_t>(*choice)];
    const bool retry = w.state() == WorkerState::kBlocked;
    const std::string label = w.pending();
    const int64_t attempt_seq = w.attempt_seq();
    std::string what =
        (retry && !w.redelivery_wait() ? (postgres ? "resume " : "retry ") : "") + label;
    w.clear_crashed();
    const uint8_t held = postgres ? 0 : w.WriteLocks();
    s.baton.Give(*choice);
    const uint8_t released = static_cast<uint8_t>(held & ~w.WriteLocks());
    if ((released & kMainFile) != 0) ++releases[0];
    if ((released & kAuxFile) != 0) ++releases[1];
    Footprint footprint = w.footprint();
    if (retry && any_step) footprint.all = true;
    auto advance = [&] {
      ++progress;
      uint8_t files = static_cast<uint8_t>(footprint.reads | footprint.writes);
      if (footprint.all) files = kMainFile | kAuxFile;
      if ((files & kMainFile) != 0) ++touched[0];
      if ((files & kAuxFile) != 0) ++touched[1];
    };
    if (w.crashed_last_step()) {
      what = "crash at " + label;
      advance();
    } else if (w.state() == WorkerState::kBlocked) {
      what += postgres ? ": waits" : w.redelivery_wait() ? ": busy, refused" : ": busy";
      w.set_blocked_at(wait_mark(w));
      w.set_touched_at(touches(w.blocked_file()));
    } else {
      advance();
    }
    s.Settle(w.state() == WorkerState::kBlocked ? *choice : -1);
    result.picks.push_back(*choice);
    result.eligible.push_back(eligible);
    result.steps.push_back(w.name() + "  " + what);
    result.footprints.push_back(footprint);
    result.attempts.push_back(attempt_seq);
    chooser.Took(result.picks.size() - 1, *choice, footprint);
  }
  if (!s.failure.empty()) s.ThrowFailure();

  const Outcome before = result.outcome;
  result.stale_refusals = s.stale_refusals;
  result.figures = s.Measure(plan, result);
  bool given_up = false;
  for (const Tally& t : s.tallies) given_up = given_up || t.given_up;
  if (given_up && before == Outcome::kOnce) {
    std::string why = fmt::format(
        "a delivery was refused {} times and given up (dead-lettered): the broker never heard "
        "it was handled",
        s.options.max_attempts);
    result.note = result.note.empty() ? why : why + "; " + result.note;
  }
  return result;
}

}  // namespace dedupsim::explore
