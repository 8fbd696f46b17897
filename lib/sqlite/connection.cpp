#include "sqlite/connection.h"

#include <fmt/format.h>
#include <poll.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <ctime>
#include <thread>
#include <utility>

#include "os/this_pid.h"
#include "sqlite/error.h"
#include "sqlite/library.h"
#include "store/sql_text.h"
#include "sqlite/statement.h"
#include "trace/trace.h"

namespace dedupsim {


std::string PlainFileName(const std::string& path) {
  return path.empty() || path.front() == '/' ? path : "./" + path;
}

struct Connection::BusyState {
  std::chrono::milliseconds timeout;
  Recorder* recorder = nullptr;  // where the first call of each wait is noted
  std::string instance;
  Connection* owner = nullptr;  // for the gate
  StepGate* gate = nullptr;
  std::chrono::steady_clock::time_point wait_started;
  int64_t calls = 0;
  std::chrono::microseconds waited{0};
  std::function<void()> on_blocked;
  std::function<bool()> other_holds;  // while true, the timeout does not run
  int wake_fd = -1;                   // readable: the pause before the next try ends
  bool keep_history = false;
  LockHistory history;
  bool holding = false;  // the write lock, as of the end of the last step
  LockHold hold;         // the current hold while holding
  bool wait_open = false;
  SteadyTime wait_blocked;
  // The recorder's stamp of this step's wait event (its busy handler's first call), -1: the
  // step did not wait (or nothing recorded it): a traced statement's waited_us runs from it.
  int64_t wait_stamp_us = -1;
  std::function<void(bool)> on_transaction;
  bool in_transaction = false;
  std::string file;             // the main database file, for the recorder's lock hand-overs
  int64_t step_end_stamp = -1;  // the last step's release stamp (-1: it released nothing)
};

// Set on traced connections only. SQLite's authorizer reports, while a statement is
// prepared, what it will do (insert into a table, read one, begin or end a transaction):
// the event carries that reading, so no view has to parse the SQL text.
struct Connection::TraceState {
  std::string actor = kActorConsumer;
  std::string target = "database";
  DeliveryRef delivery;
  std::string op;     // of the statement being prepared
  std::string table;  // of the statement being prepared
  int rank = 0;       // how telling op is: transaction 4, write 3, read 2, pragma 1
  bool updates = false;  // the statement being prepared may update a row (authorizer)
  RowWrites writes;  // rows written by this connection's statements (preupdate hook)
};

namespace {

#ifdef SQLITE_ENABLE_PREUPDATE_HOOK
// Counts the rows a statement writes itself (depth 0; a trigger's are deeper), each as
// SQLite writes it: in an INSERT, a delete is a row its OR REPLACE removed to make room for
// the new one, an update the row its ON CONFLICT ... DO UPDATE updated instead of inserting.
void CountWrites(void* state, sqlite3* db, int op, const char*, const char*, sqlite3_int64,
                 sqlite3_int64) {
  if (sqlite3_preupdate_depth(db) != 0) return;
  Connection::RowWrites& w = static_cast<Connection::TraceState*>(state)->writes;
  if (op == SQLITE_DELETE) ++w.deleted;
  if (op == SQLITE_INSERT) ++w.inserted;
  if (op != SQLITE_UPDATE) return;
  ++w.updated;
  // An update that wrote each column's value back as it was (an upsert repeated): the row
  // is updated and no value of it changed, as a table's diff shows it.
  const int columns = sqlite3_preupdate_count(db);
  for (int i = 0; i < columns; ++i) {
    sqlite3_value* was = nullptr;
    sqlite3_value* now = nullptr;
    if (sqlite3_preupdate_old(db, i, &was) != SQLITE_OK ||
        sqlite3_preupdate_new(db, i, &now) != SQLITE_OK || was == nullptr || now == nullptr) {
      return;
    }
    const int type = sqlite3_value_type(was);
    if (type != sqlite3_value_type(now)) return;
    if (type == SQLITE_INTEGER && sqlite3_value_int64(was) != sqlite3_value_int64(now)) return;
    if (type == SQLITE_FLOAT && sqlite3_value_double(was) != sqlite3_value_double(now)) return;
    if (type == SQLITE_TEXT || type == SQLITE_BLOB) {
      const void* a = type == SQLITE_TEXT ? static_cast<const void*>(sqlite3_value_text(was))
                                          : sqlite3_value_blob(was);
      const int a_bytes = sqlite3_value_bytes(was);
      const void* b = type == SQLITE_TEXT ? static_cast<const void*>(sqlite3_value_text(now))
                                          : sqlite3_value_blob(now);
      const int b_bytes = sqlite3_value_bytes(now);
      if (a_bytes != b_bytes || (a_bytes > 0 && std::memcmp(a, b, static_cast<size_t>(a_bytes)) != 0)) {
        return;
      }
    }
  }
  ++w.unchanged;
}
#endif

}  // namespace

struct Connection::AuthState {
  StatementGuard* guard = nullptr;
  TraceState* trace = nullptr;
};

namespace {

// A savepoint statement's op, from the authorizer's first argument.
std::string SavepointOp(std::string_view operation) {
  if (operation == "RELEASE") return kOpRelease;
  if (operation == "ROLLBACK") return kOpRollbackTo;
  return kOpSavepoint;
}

int Authorize(void* arg, int action, const char* a1, const char* a2, const char* db,
              const char* inner) {
  auto* auth = static_cast<Connection::AuthState*>(arg);
  if (auth->guard != nullptr) {
    const int verdict = auth->guard->Authorize(action, a1, a2, db, inner);
    if (verdict != SQLITE_OK) return verdict;
  }
  Connection::TraceState* state = auth->trace;
  if (state == nullptr) return SQLITE_OK;
  auto note = [&](int rank, std::string op, const char* table) {
    if (table != nullptr && std::string_view(table).rfind("sqlite_", 0) == 0) return;
    if (rank <= state->rank) return;
    state->rank = rank;
    state->op = std::move(op);
    state->table = table != nullptr ? table : "";
  };
  switch (action) {
    case SQLITE_TRANSACTION:
      note(4, a1 != nullptr ? a1 : "OTHER", nullptr);
      break;
    case SQLITE_SAVEPOINT:  // a1: "BEGIN" (SAVEPOINT), "RELEASE" or "ROLLBACK" (ROLLBACK TO)
      note(4, SavepointOp(a1 != nullptr ? a1 : ""), nullptr);
      break;
    case SQLITE_INSERT:
      note(3, "INSERT", a1);
      break;
    case SQLITE_UPDATE:
      state->updates = true;  // in an INSERT: its ON CONFLICT ... DO UPDATE (or a trigger's)
      note(3, "UPDATE", a1);
      break;
    case SQLITE_DELETE:
      note(3, "DELETE", a1);
      break;
    case SQLITE_READ:
      note(2, "SELECT", a1);
      break;
    case SQLITE_SELECT:
      note(1, "SELECT", nullptr);
      break;
    case SQLITE_PRAGMA:
      note(1, "PRAGMA", nullptr);
      break;
    default:
      break;
  }
  return SQLITE_OK;
}

// The pause between two tries of the lock: 0.5 ms, ended early (once) when the wake
// descriptor turns readable, so the try after the holder's end comes at once.
void PauseBeforeRetry(Connection::BusyState& state) {
  constexpr std::chrono::microseconds kPause{500};
  if (state.wake_fd < 0) {
    std::this_thread::sleep_for(kPause);
    return;
  }
  pollfd p{state.wake_fd, POLLIN, 0};
  const timespec pause{0, std::chrono::nanoseconds(kPause).count()};
  if (::ppoll(&p, 1, &pause, nullptr) > 0) state.wake_fd = -1;  // later pauses are plain
}

// Pauses about half a millisecond per call until the lock frees or the timeout passes. A
// short pause keeps the measured wait close to the time the other writer really held the
// lock.
int OnBusy(void* arg, int count) {
  auto* state = static_cast<Connection::BusyState*>(arg);
  auto now = std::chrono::steady_clock::now();
  if (state->gate != nullptr) {
    state->calls++;
    return state->gate->OnBusy(*state->owner, count) ? 1 : 0;
  }
  if (count == 0) {
    state->wait_started = now;
    const bool first_of_step = !state->wait_open;
    if (first_of_step) {
      state->wait_open = true;
      state->wait_blocked = now;
    }
    // One wait event per step, at its first call: the wait, and the time it is said to have
    // lasted (the statement's waited_us), run from it to the statement's end.
    if (first_of_step && state->recorder != nullptr) {
      TraceEvent e;
      e.at_us = state->recorder->MicrosSinceOrigin();
      state->wait_stamp_us = e.at_us;
      if (state->owner != nullptr) state->owner->Stamp(e);
      e.instance = state->instance;
      e.kind = "wait";
      e.detail = "write lock held by another connection";
      e.result = "blocked";
      e.waited_on = "the write lock";
      state->recorder->Record(std::move(e));
    }
    // Told only once the wait is on the trace: whatever the listener does next (kill the
    // holder, let it commit) is stamped after the wait, whichever thread runs first.
    if (first_of_step && state->on_blocked) state->on_blocked();
  }
  // The wait's end is known by an event, not by the clock: the budget starts once it came.
  if (state->other_holds && state->other_holds()) state->wait_started = now;
  if (now - state->wait_started >= state->timeout) return 0;
  PauseBeforeRetry(*state);
  state->calls++;
  state->waited +=
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - now);
  return 1;
}

// A process-wide count: each value names one set of cached statements (see
// Connection::cache_generation). Starts at 1, so a holder can use 0 for "none kept".
uint64_t NewCacheGeneration() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

Connection::Connection(const std::string& path, const ConnectionOptions& options)
    : busy_(std::make_unique<BusyState>()), cache_generation_(NewCacheGeneration()) {
  ConfigureSqliteLibrary();
  busy_->timeout = options.busy_timeout;
  int flags = options.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
  if (options.create && !options.read_only) flags |= SQLITE_OPEN_CREATE;
  flags |= SQLITE_OPEN_NOMUTEX;
  // Never SQLITE_OPEN_URI, and a name SQLite would read specially (the Debian library is
  // built with SQLITE_USE_URI, so "file:x.db" is a URI; ":memory:" and "" are not files)
  // is opened as the plain file it names: the file that was checked is the file opened.
  if (path.empty() && !options.in_memory) {
    throw SqliteError(1, "cannot open a database with an empty name");
  }
  int rc = sqlite3_open_v2(
      options.in_memory ? ":memory:" : PlainFileName(path).c_str(), &db_,
      flags | (options.in_memory ? SQLITE_OPEN_MEMORY | SQLITE_OPEN_CREATE : 0), nullptr);
  if (rc != SQLITE_OK) {
    int code = db_ ? sqlite3_extended_errcode(db_) : rc;
    std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw SqliteError(code, "cannot open " + path + ": " + message);
  }
  sqlite3_extended_result_codes(db_, 1);
  if (const char* file = sqlite3_db_filename(db_, "main")) busy_->file = file;
  busy_->owner = this;
  sqlite3_busy_handler(db_, &OnBusy, busy_.get());
}

Connection::~Connection() { Close(); }

Connection::Connection(Connection&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)),
      busy_(std::move(other.busy_)),
      trace_(std::move(other.trace_)),
      auth_(std::move(other.auth_)),
      recorder_(other.recorder_),
      instance_(std::move(other.instance_)),
      gate_(other.gate_),
      hook_faults_(std::move(other.hook_faults_)),
      cache_(std::move(other.cache_)),
      cache_generation_(std::exchange(other.cache_generation_, NewCacheGeneration())) {
  Rebind();
}

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    Close();
    db_ = std::exchange(other.db_, nullptr);
    busy_ = std::move(other.busy_);
    trace_ = std::move(other.trace_);
    auth_ = std::move(other.auth_);
    recorder_ = other.recorder_;
    instance_ = std::move(other.instance_);
    gate_ = other.gate_;
    hook_faults_ = std::move(other.hook_faults_);
    cache_ = std::move(other.cache_);
    cache_generation_ = std::exchange(other.cache_generation_, NewCacheGeneration());
    Rebind();
  }
  return *this;
}

void Connection::Rebind() {
  if (busy_) busy_->owner = this;
  for (auto& [sql, statement] : cache_) statement->connection_ = this;
}

void Connection::Close() noexcept {
  cache_.clear();  // finalize before closing
  cache_generation_ = NewCacheGeneration();
  if (db_ != nullptr) {
    StepMark mark = StepStarting();
    sqlite3_close_v2(db_);  // unfinalized statements keep it alive until they finish
    db_ = nullptr;
    StepEnded(mark);  // an open transaction's lock goes with the handle
  }
}

void Connection::KeepLockHistory() {
  if (!WatchesLock()) busy_->holding = HoldsWriteLock();
  busy_->keep_history = true;
}

bool Connection::WatchesLock() const { return busy_->keep_history || recorder_ != nullptr; }

LockHistory Connection::lock_history() const { return busy_->history; }

void Connection::KeepWaitingWhile(std::function<bool()> other_holds, int wake_fd) {
  busy_->other_holds = std::move(other_holds);
  busy_->wake_fd = wake_fd;
}

void Connection::SetBusyTimeout(std::chrono::milliseconds timeout) { busy_->timeout = timeout; }

void Connection::OnBlocked(std::function<void()> callback) {
  busy_->on_blocked = std::move(callback);
}

void Connection::OnTransactionChange(std::function<void(bool open)> callback) {
  busy_->on_transaction = std::move(callback);
  busy_->in_transaction = db_ != nullptr && sqlite3_get_autocommit(db_) == 0;
}

Connection::StepMark Connection::StepStarting() {
  StepMark mark;
  if (busy_) {
    busy_->wait_open = false;  // a wait belongs to the step it happened in
    busy_->wait_stamp_us = -1;
    busy_->step_end_stamp = -1;
  }
  if (busy_ && WatchesLock()) {
    mark.started = std::chrono::steady_clock::now();
    mark.held_before = busy_->holding;
  }
  return mark;
}

void Connection::StepEnded(const StepMark& mark) {
  if (!busy_) return;
  BusyState& s = *busy_;
  if (s.on_transaction) {
    const bool open = db_ != nullptr && sqlite3_get_autocommit(db_) == 0;
    if (open != s.in_transaction) {
      s.in_transaction = open;
      s.on_transaction(open);
    }
  }
  const bool watches = WatchesLock();
  if (!s.wait_open && !watches) return;
  SteadyTime now = std::chrono::steady_clock::now();
  if (s.wait_open) {
    s.wait_open = false;
    if (s.keep_history) s.history.waits.push_back({s.wait_blocked, now});
  }
  if (!watches) return;
  const bool holding = HoldsWriteLock();
  if (holding && !mark.held_before) {
    s.hold = LockHold{mark.started, now, {}, {}};
    if (recorder_ != nullptr) {
      NoteAt("lock", "write lock taken", "holding", recorder_->LockTaken(s.file, &s));
    }
  } else if (!holding && mark.held_before) {
    s.hold.release_started = mark.started;
    s.hold.released = now;
    if (s.keep_history) s.history.held.push_back(s.hold);
    auto held = std::chrono::duration_cast<std::chrono::microseconds>(now - s.hold.acquired);
    if (recorder_ != nullptr) {
      // SQLite released the lock inside this step; another connection may have taken it
      // and stamped its take before this thread got back to stamp the release.
      const int64_t now_us = recorder_->MicrosSinceOrigin();
      const int64_t at =
          recorder_->ReleaseStamp(s.file, &s, recorder_->MicrosAt(mark.started), now_us);
      // The step's own event is stamped at the release too, never later: a take recorded
      // after now_us (this thread preempted before it stamps the statement) comes after it.
      s.step_end_stamp = at;
      NoteAt("lock", "write lock released",
             fmt::format("held {:.1f} ms", static_cast<double>(held.count()) / 1000.0), at);
    }
  }
  s.holding = holding;
}

sqlite3* Connection::handle() const {
  if (db_ == nullptr) throw DatabaseError("connection is closed");
  return db_;
}

void Connection::ApplyPragmas(JournalMode journal, Synchronous synchronous) {
  Statement mode = Prepare(journal == JournalMode::kWal ? "PRAGMA journal_mode=WAL"
                                                        : "PRAGMA journal_mode=DELETE");
  mode.Step();
  mode.Reset();  // the switch commits now, before synchronous changes (set-up may run OFF)
  Exec(std::string("PRAGMA synchronous=") + std::string(ToString(synchronous)));
}

void Connection::SetCheckpointOnClose(bool on) {
  sqlite3_db_config(handle(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, on ? 0 : 1, nullptr);
}

void Connection::Exec(std::string_view sql) {
  Statement statement = Prepare(sql);
  statement.Execute();
}

void Connection::ExecScript(const std::string& sql) {
  char* message = nullptr;
  StepMark mark = StepStarting();
  int rc = sqlite3_exec(handle(), sql.c_str(), nullptr, nullptr, &message);
  StepEnded(mark);  // its waits and lock changes count like a statement's
  if (rc != SQLITE_OK) {
    std::string text = message ? message : sqlite3_errstr(rc);
    sqlite3_free(message);
    const int code = sqlite3_extended_errcode(db_);
    throw SqliteError(code, DescribeFailure(db_, code, text));
  }
}

Statement Connection::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  if (trace_) {
    trace_->op.clear();
    trace_->table.clear();
    trace_->rank = 0;
    trace_->updates = false;
  }
  int rc = sqlite3_prepare_v2(handle(), sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    throw SqliteError(
        sqlite3_extended_errcode(db_),
        DescribeFailure(db_, sqlite3_extended_errcode(db_),
                        "prepare failed: " + std::string(sqlite3_errmsg(db_)) +
                            " in: " + SqlForMessage(sql)));
  }
  Statement statement(*this, stmt);
  if (trace_) {
    statement.op_ = trace_->op.empty() ? "OTHER" : trace_->op;
    statement.table_ = trace_->table;
    statement.may_update_ = trace_->updates;
  }
  return statement;
}

int64_t Connection::Changes() const { return sqlite3_changes64(handle()); }

bool Connection::InTransaction() const { return sqlite3_get_autocommit(handle()) == 0; }

BusyStats Connection::busy() const { return BusyStats{busy_->calls, busy_->waited}; }

void Connection::SetGate(StepGate* gate) {
  gate_ = gate;
  busy_->gate = gate;
}

Statement& Connection::Cached(std::string_view sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    it = cache_.emplace(std::string(sql), std::make_unique<Statement>(Prepare(sql))).first;
  } else {
    it->second->Reset();
    if (trace_ && it->second->op_.empty()) {
      // Cached before the connection traced: read what it does as a fresh prepare would
      // (the cached statement stays where its callers find it).
      Statement fresh = Prepare(sql);
      it->second->op_ = fresh.op_;
      it->second->table_ = fresh.table_;
      it->second->may_update_ = fresh.may_update_;
    }
  }
  return *it->second;
}

void Connection::SetTrace(Recorder* recorder, std::string instance) {
  if (!WatchesLock()) busy_->holding = HoldsWriteLock();
  recorder_ = recorder;
  instance_ = std::move(instance);
  busy_->recorder = recorder;
  busy_->instance = instance_;
  if (recorder != nullptr && !trace_) {
    trace_ = std::make_unique<TraceState>();
    if (!auth_) auth_ = std::make_unique<AuthState>();
    auth_->trace = trace_.get();
    // Statements prepared before this are expired by SQLite and read again on next use.
    sqlite3_set_authorizer(handle(), &Authorize, auth_.get());
#ifdef SQLITE_ENABLE_PREUPDATE_HOOK
    sqlite3_preupdate_hook(handle(), &CountWrites, trace_.get());
#endif
    // Holders of cached statements (SqliteStore's hot ones) fetch them again through
    // Cached, which names those prepared before the trace began.
    cache_generation_ = NewCacheGeneration();
  }
}

void Connection::SetGuard(StatementGuard* guard) {
  if (!auth_) {
    if (guard == nullptr) return;
    auth_ = std::make_unique<AuthState>();
    sqlite3_set_authorizer(handle(), &Authorize, auth_.get());
  }
  auth_->guard = guard;
}

StatementGuard* Connection::guard() const { return auth_ ? auth_->guard : nullptr; }

Connection::RowWrites Connection::RowsWritten() const { return trace_ ? trace_->writes : RowWrites{}; }

bool Connection::SeesRowWrites() {
#ifdef SQLITE_ENABLE_PREUPDATE_HOOK
  return true;
#else
  return false;
#endif
}

void Connection::SetTraceRole(std::string actor, std::string target) {
  if (!trace_) return;
  trace_->actor = std::move(actor);
  trace_->target = std::move(target);
}

void Connection::SetDelivery(DeliveryRef delivery) {
  if (trace_) trace_->delivery = std::move(delivery);
}

const DeliveryRef& Connection::delivery() const {
  static const DeliveryRef kNone;
  return trace_ ? trace_->delivery : kNone;
}

void Connection::Stamp(TraceEvent& e) const {
  e.instance = instance_;
  e.pid = ThisPid();
  if (!trace_) return;
  e.actor = trace_->actor;
  e.target = trace_->target;
  e.key = trace_->delivery.key;
  e.delivery = trace_->delivery.number;
  e.copy = trace_->delivery.copy;
}

void Connection::Note(const std::string& kind, const std::string& detail,
                      const std::string& result) {
  NoteAt(kind, detail, result, -1);
}

void Connection::NoteAt(const std::string& kind, const std::string& detail,
                        const std::string& result, int64_t at_us) {
  if (recorder_ == nullptr) return;
  TraceEvent e;
  Stamp(e);
  RecordNote(*recorder_, std::move(e), kind, detail, result, at_us);
}

void Connection::NoteOutcome(const std::string& outcome, const std::string& verdict) {
  if (recorder_ == nullptr) return;
  TraceEvent e;
  Stamp(e);
  e.verdict = verdict;
  RecordNote(*recorder_, std::move(e), "outcome", outcome, "");
}

int64_t Connection::WaitStamp() const { return busy_ ? busy_->wait_stamp_us : -1; }

int64_t Connection::StepEventStamp(int64_t now_us) const {
  if (!busy_ || busy_->step_end_stamp < 0) return now_us;
  return std::min(now_us, busy_->step_end_stamp);
}

bool Connection::HoldsWriteLock() const {
  return db_ != nullptr && sqlite3_txn_state(db_, nullptr) == SQLITE_TXN_WRITE;
}

}  // namespace dedupsim
