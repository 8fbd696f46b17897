// A connection to one SQLite database file: RAII over sqlite3*, with extended result
// codes on and a busy handler that waits up to busy_timeout while counting its calls and
// the time it slept, so a scenario can report how long a writer waited for the lock.
//
// A Connection is used by one thread at a time. Never carry one across fork(): open
// connections in the process that uses them. Moving a Connection keeps its busy counters
// valid (they live on the heap).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "store/database_settings.h"
#include "store/lock_waits.h"
#include "store/workload_database.h"
#include "trace/trace.h"

struct sqlite3;

namespace dedupsim {

class Recorder;
class Statement;
class Connection;

// A seam for a scheduler that decides which instance takes its next step (the explorer):
// it is called before every statement and hook, and in place of sleeping when a statement
// would wait for a lock. Abstract so the explorer (and tests) can step instances by hand.
class StepGate {
 public:
  virtual ~StepGate() = default;
  // Before a statement's first step. May block until scheduled, or throw SimulatedCrash.
  virtual void BeforeStatement(Connection& connection, std::string_view sql) = 0;
  // Before a hook point runs. May block until scheduled, or throw SimulatedCrash.
  virtual void BeforeHook(Connection& connection, std::string_view name) = 0;
  // The statement found the database locked (count: earlier calls for this wait). Return
  // true to try again (after letting another instance run), false to fail with SQLITE_BUSY.
  virtual bool OnBusy(Connection& connection, int count) = 0;
};

// Asked first about every action SQLite's authorizer reports on the connection (while a
// statement is prepared, and while one runs the statements it runs inside), before the
// trace reads it. Abstract so the sandbox for a file's SQL (lib/sqlite/sandbox.h) can hold
// the connection to its rules while it runs that SQL.
class StatementGuard {
 public:
  virtual ~StatementGuard() = default;
  // The arguments of sqlite3_set_authorizer's callback. Returns SQLITE_OK to allow the
  // action, SQLITE_DENY to fail the statement (SQLITE_AUTH).
  virtual int Authorize(int action, const char* a1, const char* a2, const char* database,
                        const char* inner) = 0;
};

// JournalMode and Synchronous: store/database_settings.h.

// The name to hand sqlite3_open_v2 for the file at path: "./" before a relative path, so
// that "file:x.db", ":memory:" and the like name plain files, whatever SQLITE_USE_URI the
// library was built with (Debian's: on). Every open of a dedupsim file goes through it.
std::string PlainFileName(const std::string& path);

struct ConnectionOptions {
  bool create = false;     // create the file if missing (SQLITE_OPEN_CREATE)
  bool read_only = false;  // SQLITE_OPEN_READONLY
  bool in_memory = false;  // a private in-memory database; the path is ignored
  std::chrono::milliseconds busy_timeout{5000};
};

// A LockWaits (store/lock_waits.h): its busy handler's figures, its lock history, its waits
// kept going while another instance's transaction is known to go on, and its Close.
class Connection final : public LockWaits {
 public:
  // Opens path; throws SqliteError when SQLite cannot open it.
  Connection(const std::string& path, const ConnectionOptions& options);
  ~Connection();
  Connection(Connection&&) noexcept;
  Connection& operator=(Connection&&) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sets journal_mode and synchronous. Writes to the file: call only on a database that
  // dedupsim created.
  void ApplyPragmas(JournalMode journal, Synchronous synchronous);
  // In WAL mode SQLite checkpoints the log into the database file (and syncs both at the
  // synchronous level) when the last connection to a file closes, then deletes the -wal and
  // -shm files. Off: the log and its index stay for the next connection, which reads them.
  // Writes nothing itself; changes no transaction's journal or synchronous setting.
  void SetCheckpointOnClose(bool on);

  // Runs one statement that returns no rows we need (BEGIN, COMMIT, PRAGMA ...). Traced.
  void Exec(std::string_view sql);
  // Runs a script of several statements; not traced (schema set-up).
  void ExecScript(const std::string& sql);
  Statement Prepare(std::string_view sql);

  // Rows changed by the last INSERT, UPDATE or DELETE.
  int64_t Changes() const;
  // True while a transaction is open on this connection.
  bool InTransaction() const;
  BusyStats busy() const override;

  // Keeps every write-lock hold and every blocked wait from now on (off by default: the
  // bench and soak run millions of transactions). Kept across moves.
  void KeepLockHistory() override;
  LockHistory lock_history() const override;
  // Called (on this connection's thread) at the first busy-handler call of each wait, after
  // the wait's "wait" event is recorded (when tracing): what the callback causes comes after.
  void OnBlocked(std::function<void()> callback);
  // From now on, a wait for a lock gives up (SQLITE_BUSY) after timeout.
  void SetBusyTimeout(std::chrono::milliseconds timeout);
  // While other_holds() returns true (asked at each busy-handler call), a wait does not use
  // up the busy timeout: the timeout runs from the first call at which it returns false.
  // For a wait whose end is known by an event (lesson/instances.h: the first instance's
  // transaction, held as long as --hold-ms asks or a loaded machine stalls it), so that
  // neither the hold nor the scheduler decides whether the waiter gives up. wake_fd >= 0:
  // a descriptor that turns readable (data or EOF) when that event comes; the busy
  // handler's pause between two tries of the lock ends as soon as it does (once: later
  // pauses are the plain 0.5 ms), so the retry follows the holder's end at once.
  void KeepWaitingWhile(std::function<bool()> other_holds, int wake_fd = -1) override;
  // Called after a step or close that opened (true) or ended (false) a transaction: from
  // BEGIN's return to COMMIT's or ROLLBACK's return, the connection is in a transaction.
  void OnTransactionChange(std::function<void(bool open)> callback);

  // Every statement run through this connection is recorded in *recorder under the
  // given instance name, and every take and release of the file's write lock as a "lock"
  // event (with the statement, or the close, it came with). recorder may be null (no
  // trace); it must outlive the connection.
  void SetTrace(Recorder* recorder, std::string instance);
  Recorder* recorder() const { return recorder_; }
  const std::string& instance() const { return instance_; }
  // Records a step that is not a statement (a hook, a crash) under this instance.
  void Note(const std::string& kind, const std::string& detail, const std::string& result);
  // Records the delivery's outcome with the business's verdict (Session::NoteOutcome).
  void NoteOutcome(const std::string& outcome, const std::string& verdict);
  // Who this connection's steps belong to and what it talks to, written into each event:
  // actor kActorConsumer and target "database" unless set. Call after SetTrace.
  void SetTraceRole(std::string actor, std::string target);
  // The delivery this connection works on: its events carry the key and the number.
  void SetDelivery(DeliveryRef delivery);
  const DeliveryRef& delivery() const;
  // Fills e's instance, pid, actor, target, key and delivery from this connection.
  void Stamp(TraceEvent& e) const;
  // Rows this connection's statements wrote themselves since it was traced, each as SQLite's
  // preupdate hook saw it (an INSERT OR REPLACE's replaced row among the deleted, an ON
  // CONFLICT ... DO UPDATE's row among the updated); all 0 untraced, or where SQLite was
  // built without the hook (SeesRowWrites).
  struct RowWrites {
    int64_t inserted = 0;
    int64_t updated = 0;
    int64_t deleted = 0;
    int64_t unchanged = 0;  // of the updated: those whose every value stayed as it was
  };
  RowWrites RowsWritten() const;
  // Whether this build counts them: SQLite was built with the preupdate hook.
  static bool SeesRowWrites();

  // Hands the scheduling of this connection's steps to gate (nullptr: none). The gate must
  // outlive the connection.
  void SetGate(StepGate* gate);
  StepGate* gate() const { return gate_; }

  // Hands every authorizer action to guard first (nullptr: none). The guard must outlive
  // its time on the connection; it is kept across moves.
  void SetGuard(StatementGuard* guard);
  StatementGuard* guard() const;

  // Faults a lesson puts at hook points (lib/files/ scenario files): called with each hook
  // point's name as the consumer reaches it (RunHook), before the consumer's own hook; it
  // returns what to do there (hold, crash) or an empty function. Kept across moves.
  using HookFaults = std::function<std::function<void()>(std::string_view point)>;
  void SetHookFaults(HookFaults faults) { hook_faults_ = std::move(faults); }
  const HookFaults& hook_faults() const { return hook_faults_; }

  // A prepared statement kept for reuse, reset and with no bindings, owned by this
  // connection: the hot path prepares each SQL text once per connection.
  Statement& Cached(std::string_view sql);
  // Names the statements now in the cache: it changes whenever they may have been
  // finalized (Close, or a move out of or into this connection) and never takes an old
  // value again, so a hot path may keep pointers from Cached() while it is unchanged.
  uint64_t cache_generation() const { return cache_generation_; }

  // Closes the handle now, committing nothing: an open transaction is discarded, as when
  // the process dies. Later calls throw.
  void Close() noexcept override;
  bool is_open() const { return db_ != nullptr; }
  // True while this connection's transaction holds the file's write lock (it has written:
  // SQLite's SQLITE_TXN_WRITE); false when closed or not in a write transaction.
  bool HoldsWriteLock() const;

  sqlite3* handle() const;  // for lib/ internals; throws if closed

  struct BusyState;   // the busy handler's counters; defined in connection.cpp
  struct TraceState;  // the trace identity and SQLite's reading of the last prepare
  struct AuthState;   // what the authorizer asks: the guard, then the trace

 private:
  friend class Statement;
  // Around every sqlite3_step: closes an open wait, and watches the write lock while the
  // connection is traced or keeps its lock history (WatchesLock): a traced connection
  // records each take and release ("lock" events) on its recorder, whatever the lesson, and
  // KeepLockHistory keeps them in lock_history() too.
  struct StepMark {
    SteadyTime started;
    bool held_before = false;
  };
  bool WatchesLock() const;
  StepMark StepStarting();
  void StepEnded(const StepMark& mark);
  // The time to stamp the event of the step that just ended with: now_us, or, if the step
  // released the write lock, the time that release was stamped with (Recorder::ReleaseStamp),
  // so the statement is not drawn ending after the next holder began, however late its
  // thread comes back to stamp it.
  int64_t StepEventStamp(int64_t now_us) const;
  // The recorder's stamp of the wait event of the step that just ended (its busy handler's
  // first call), or -1 when it did not wait.
  int64_t WaitStamp() const;
  void NoteAt(const std::string& kind, const std::string& detail, const std::string& result,
              int64_t at_us);
  void Rebind();  // after a move: point the busy state and cached statements here

  sqlite3* db_ = nullptr;
  std::unique_ptr<BusyState> busy_;
  std::unique_ptr<TraceState> trace_;
  std::unique_ptr<AuthState> auth_;  // created with the authorizer, on first need
  Recorder* recorder_ = nullptr;
  std::string instance_;
  StepGate* gate_ = nullptr;
  HookFaults hook_faults_;
  // Looked up by string_view without building a std::string (C++20 heterogeneous lookup).
  struct SqlHash {
    using is_transparent = void;
    size_t operator()(std::string_view sql) const { return std::hash<std::string_view>{}(sql); }
  };
  std::unordered_map<std::string, std::unique_ptr<Statement>, SqlHash, std::equal_to<>> cache_;
  uint64_t cache_generation_;
};

}  // namespace dedupsim
