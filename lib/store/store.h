// What a consumer may ask of a database, as small interfaces, so a consumer never knows
// which database it runs on: a Session (begin, commit, rollback, its isolation, the trace
// and hook points), the inbox (claim a key: inserted or duplicate, as a value), the stock.
// Each backend implements Store with its own SQL (lib/sqlite/store.h, lib/postgres/store.h);
// a Backend opens stores and reads the figures a scenario reports.
//
// A Store is used by one thread at a time, like the connection under it. Failures throw
// StoreError (store/error.h); a duplicate key on a claim is never an exception.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/hooks.h"
#include "store/records.h"
#include "trace/trace.h"

namespace dedupsim {

class LessonTables;
class LockWaits;
class SideStores;
class TablesReader;
class Recorder;
class KeyedStores;
class UntrustedSql;

// How a transaction starts. SQLite takes the write lock at BEGIN IMMEDIATE/EXCLUSIVE;
// PostgreSQL locks rows as statements touch them and treats all three as BEGIN.
enum class TransactionKind { kDeferred, kImmediate, kExclusive };

// The isolation level of the transactions a session begins. SQLite is always serializable
// (one writer at a time) and ignores it; PostgreSQL runs each level for real.
enum class Isolation { kReadCommitted, kRepeatableRead, kSerializable };

std::string_view ToString(Isolation level);  // "read-committed", "repeatable-read", "serializable"

// One statement of a watched session, as the server reported it from outside (PostgreSQL:
// pg_stat_activity and pg_blocking_pids seen from a side connection) and as it timed itself.
struct WatchedStatement {
  std::string sql;
  bool waited = false;                   // the server showed it waiting for a lock
  std::string waited_on;                 // "row StockItems", "key Inbox"; "" when it did not wait
  std::string wait_event;                // the server's wait_event ("transactionid", "tuple")
  std::string lock_mode;                 // the lock asked for and not granted ("ShareLock")
  std::vector<int> blocking_pids;        // pg_blocking_pids while it waited
  // How long it had waited when the look that first saw it waiting ran, by the server's
  // clock (clock_timestamp() - pg_locks.waitstart, PostgreSQL 14+); nullopt when the server
  // did not say (an older server, or waitstart still null).
  std::optional<std::chrono::microseconds> waited_when_seen;
  std::string error_code;                // the backend's code ("23505"), "" on success
  int64_t rows = -1;                     // rows an INSERT/UPDATE/DELETE changed; -1 otherwise
  std::chrono::microseconds elapsed{0};  // sent to answered
  // A statement that waited: from the wait's start (as the server dated it, where traced) to
  // the answer, the span the pictures draw and say ("after waiting N ms"); elapsed where
  // the wait was not traced; 0 when it did not wait.
  std::chrono::microseconds waited_for{0};
  std::chrono::steady_clock::time_point answered{};  // when the answer came (steady clock)
};

class Session {
 public:
  virtual ~Session() = default;
  // Throws StoreError when BEGIN fails (SQLite: BEGIN IMMEDIATE past the busy timeout).
  virtual void Begin(TransactionKind kind) = 0;
  virtual void Commit() = 0;
  // Rolls back the open transaction; does nothing when none is open.
  virtual void Rollback() = 0;
  virtual bool InTransaction() const = 0;
  // SAVEPOINT name, ROLLBACK TO SAVEPOINT name, RELEASE SAVEPOINT name in the open
  // transaction (name: a plain identifier). Rolling back to a savepoint undoes what ran
  // since it, and on PostgreSQL also clears an error raised since it (25P02 no longer).
  virtual void Savepoint(std::string_view name) = 0;
  virtual void RollbackToSavepoint(std::string_view name) = 0;
  virtual void ReleaseSavepoint(std::string_view name) = 0;
  virtual Isolation isolation() const = 0;
  virtual void SetIsolation(Isolation level) = 0;
  // Records the hook on this session's trace and runs it (hooks.h).
  virtual void RunHook(const char* name, const Hook& hook) = 0;
  // Records a step that is not a statement (a send, a note) on this session's trace.
  virtual void Note(const std::string& kind, const std::string& detail,
                    const std::string& result) = 0;
  // Records what the consumer made of its delivery ("Processed", "Skipped", ...) with the
  // business's verdict on it (kVerdictRight, kVerdictWrong, or "": not judged), which the
  // pictures colour as the run's lines do.
  virtual void NoteOutcome(const std::string& outcome, const std::string& verdict) {
    (void)verdict;
    Note("outcome", outcome, "");
  }
  // From now on, this session's steps work for `delivery` (trace.h): its key and the
  // broker's number are on every event, as Connection::SetDelivery does for SQLite.
  virtual void SetDelivery(DeliveryRef delivery) = 0;
  // From now on, this session's steps are traced as `actor` (trace.h kActor*: a cleanup
  // job, an operator) talking to `target` ("database"), as Connection::SetTraceRole does.
  virtual void SetTraceRole(std::string actor, std::string target) = 0;
  // Fills who did e (instance, pid, actor, and the delivery it works for) as this session's
  // own steps carry it: for a step someone else records on its behalf (the broker records
  // a send as its sender's). A session that is not traced leaves e as it is.
  virtual void StampTrace(TraceEvent& e) const { (void)e; }
  // Every statement so far, where the backend watches them from the server's side (a store
  // a PgBackend opened); empty on SQLite, whose waits are its busy handler's.
  virtual std::vector<WatchedStatement> WatchedStatements() const { return {}; }
  // Runs on_wait, on this session's thread, whenever a statement of it is seen waiting for
  // a lock: where statements are watched, when the server shows it waiting (PostgreSQL);
  // on SQLite, at the busy handler's first call of each wait.
  virtual void SetWaitListener(std::function<void()> on_wait) { (void)on_wait; }
  // The session's own measure of its waits for locks (store/lock_waits.h: SQLite's busy
  // handler and write-lock history), or null where the backend keeps none (PostgreSQL,
  // whose waits are the server's: WatchedStatements). Lives as long as the session.
  virtual LockWaits* lock_waits() { return nullptr; }
  // From now on, a statement of this session that waits for a lock longer than timeout
  // (more than 0) gives up with StoreError: SQLite's busy timeout (code "5", SQLITE_BUSY),
  // PostgreSQL's lock_timeout (55P03; set on the session, untraced). Throws DatabaseError
  // on a session that sets none.
  virtual void SetLockTimeout(std::chrono::milliseconds timeout);
  // From now on, the database ends this session once it has stood idle in an open
  // transaction longer than timeout (more than 0): its transaction rolled back, its locks
  // freed (PostgreSQL's idle_in_transaction_session_timeout, set untraced). Throws
  // DatabaseError where the database has no such timeout (SQLite: nothing but the death of
  // the process ends a writer's transaction).
  virtual void SetIdleInTransactionTimeout(std::chrono::milliseconds timeout);
  // From now on, each hook point of this session runs the lesson's fault there first
  // (faults(name): a crash, a sleep), then the consumer's own hook.
  virtual void SetHookFaults(HookFaults faults) = 0;
  // A step of the consumer's own that is neither a statement nor a hook (a consumer file's
  // publish), named for a scheduler that orders this session's steps (the explorer's gate),
  // which may switch to another consumer here. Records nothing; under no scheduler it does
  // nothing. Throws what the scheduler throws there (SimulatedCrash).
  virtual void SchedulingPoint(std::string_view name) { (void)name; }
};

class StockStore {
 public:
  virtual ~StockStore() = default;
  // Adds quantity to the book's Reserved, in the open transaction or in its own.
  virtual void AddReserved(std::string_view book_id, int64_t quantity) = 0;
  // The book's stock row as this session sees it (inside its transaction, if one is open).
  virtual StockItem ReadStock(std::string_view book_id) = 0;
};

class InboxStore {
 public:
  virtual ~InboxStore() = default;
  // Inserts a completed row (ReceivedAt = CompletedAt = now): the inbox's one-step claim.
  virtual InsertResult ClaimCompleted(InboxKey key, std::string_view message_id,
                                      std::string_view consumer, TimePoint now) = 0;
  // The same claim as INSERT ... ON CONFLICT DO NOTHING: an existing key is not an error
  // (and on PostgreSQL does not abort the transaction); kDuplicateKey when no row went in.
  // A key another transaction holds uncommitted is waited for, as by ClaimCompleted.
  virtual InsertResult ClaimCompletedIfAbsent(InboxKey key, std::string_view message_id,
                                              std::string_view consumer, TimePoint now) = 0;
  // Phase 1 of the two-phase record: a row in progress (CompletedAt NULL).
  virtual InsertResult ClaimInProgress(InboxKey key, std::string_view message_id,
                                       std::string_view consumer, TimePoint now) = 0;
  // Phase 2: marks the row completed.
  virtual void Complete(InboxKey key, std::string_view message_id, std::string_view consumer,
                        TimePoint now) = 0;
  // The row the key finds. With kMessageIdOnly the consumer plays no part.
  virtual std::optional<InboxRow> Find(InboxKey key, std::string_view message_id,
                                       std::string_view consumer) = 0;
};

// Everything the post's consumers use, on one connection.
class Store : public Session, public StockStore, public InboxStore {
 public:
  // The reservation, hashed, receipt and lease tables (store/keyed_stores.h) on this
  // store's connection; throws DatabaseError on a store that has none.
  virtual KeyedStores& keyed();
  // The other lessons' tables (store/lesson_tables.h) on this store's connection, in its
  // transaction when one is open. Lives as long as the store.
  virtual LessonTables& tables() = 0;
  // Running SQL that dedupsim did not write (store/untrusted_sql.h) on this store's
  // connection, in its transaction when one is open; throws DatabaseError on a store that
  // runs none. Lives as long as the store.
  virtual UntrustedSql& untrusted();
};

// A transaction on a session: Begin in the constructor, Rollback in the destructor unless
// Commit or Rollback ran. The state is tracked so nothing is rolled back twice; the
// destructor never throws.
class ScopedTransaction {
 public:
  enum class State { kActive, kCommitted, kRolledBack };

  explicit ScopedTransaction(Session& session, TransactionKind kind = TransactionKind::kDeferred);
  ~ScopedTransaction();
  ScopedTransaction(const ScopedTransaction&) = delete;
  ScopedTransaction& operator=(const ScopedTransaction&) = delete;

  void Commit();
  void Rollback();
  State state() const { return state_; }

 private:
  Session& session_;
  State state_ = State::kActive;
};

// What a database keeps of a writer process that dies with its work unfinished, for the
// next connection to recover: made before the process runs (Backend::WatchForCrash), it
// reads what is there then. After the death, Found reads what the dead process `pid` left,
// before anything opens the database, and says it in a sentence; then Recover opens the next
// connection (traced under recorder as the probe "check"), which recovers, and says what
// that open was seen to do ("" when nothing more was seen than Found said).
class CrashRecovery {
 public:
  virtual ~CrashRecovery() = default;
  virtual std::string Found(int pid) = 0;
  virtual std::string Recover(Recorder& recorder, int pid) = 0;
};

// What a database's Open does where no database exists yet.
enum class IfMissing { kCreate, kFail };

// One database a scenario runs on: it opens a store per delivery and reads the figures
// back. Safe to share between threads; each Open returns a store for one thread.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;  // "sqlite", "postgres"
  // A new connection whose statements are traced under instance (recorder may be null).
  virtual std::unique_ptr<Store> Open(Recorder* recorder, const std::string& instance) const = 0;
  // Empties the schema's tables (the Inbox tables, StockReservations, StockItems, ...; not
  // a side store's) and stocks one book. Returns the tables that held rows and were
  // emptied, in the schema's order, as the database counted them.
  virtual std::vector<std::string> ResetInventory(const StockItem& item) const = 0;
  // Inserts one more stock item (beside what ResetInventory left).
  virtual void AddStock(const StockItem& item) const = 0;
  // The stock row of book_id; throws DatabaseError when there is none.
  virtual StockItem ReadStock(std::string_view book_id) const = 0;
  // Rows in a table of the schema (a fixed name: "Inbox", "StockItems", ...).
  virtual int64_t CountRows(std::string_view table) const = 0;
  // Before a writer process that may die runs: what the next opener will recover from
  // (SQLite: the files a dead writer leaves). Null where the database ends a dead
  // connection's transaction itself (a server).
  virtual std::unique_ptr<CrashRecovery> WatchForCrash() const { return nullptr; }
  // A reader of every table of the database (store/tables_reader.h) and, when sides is
  // given, of the run's side stores after them, for the step-through page. The backend and
  // sides must outlive the reader.
  virtual std::unique_ptr<TablesReader> OpenTablesReader(const SideStores* sides) const = 0;
  // Where the database is a server of sessions: waits up to `wait` for the session whose
  // server pid is server_pid (one WatchedStatement::blocking_pids named) to leave the
  // server's list of sessions (a session the server ended frees its locks first and leaves
  // the list a moment later); true once it has, false when it is still there. Throws
  // DatabaseError where the database has no sessions of its own (SQLite).
  virtual bool AwaitSessionGone(int server_pid, std::chrono::milliseconds wait) const;
};

}  // namespace dedupsim
