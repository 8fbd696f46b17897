// A connection to one PostgreSQL database: RAII over libpq's PGconn. Every statement is
// prepared once per connection and run asynchronously (send, then poll the socket), so a
// statement that blocks inside the server can be watched while it waits: with a lock watch
// (WatchWaits, postgres/lock_watch.h), each poll that finds the statement still running
// asks the server, from outside, whether this backend waits for a lock. What the server
// said and how long the statement took are kept per statement (WatchedStatement) and on
// the trace.
//
// A PgConnection is used by one thread at a time. Never carry one across fork(): open
// connections in the process that uses them.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "postgres/result.h"
#include "store/records.h"
#include "store/store.h"
#include "trace/trace.h"

struct pg_conn;

namespace dedupsim {

class PgLockWatch;
class Recorder;

using PgParams = std::vector<std::optional<std::string>>;

// A statement of one connection, found by its text once (PgConnection::Statement) and kept
// by a hot path, which then runs it without looking its text up again. Valid for the
// connection that made it (and the one it is moved into).
class PgStatement {
 public:
  PgStatement() = default;
  bool valid() const { return index_ >= 0; }

 private:
  friend class PgConnection;
  explicit PgStatement(int index) : index_(index) {}
  int index_ = -1;
};

class PgConnection;

// Hands the scheduling of a connection's statements to a deterministic scheduler (the
// explorer's), as StepGate does for SQLite. BeforeStatement runs before a statement is
// sent. Blocked runs when the side connection shows the statement waiting for a lock
// (wait_event_type Lock and pg_blocking_pids non-empty: the server's word, never a
// timeout); it returns when the scheduler lets the connection look again (true), or false
// to give the statement up (it is cancelled and fails with SQLSTATE 57014). Released runs
// when a statement that was Blocked has its answer; it returns when the scheduler picks
// the connection to go on. Answered runs when any statement's answer has arrived, before
// the statement's step is stamped in the trace: what a thread preempted there would do
// (the server may have ended the transaction and let another connection go on long
// before the step is stamped); by default it does nothing.
class PgStepGate {
 public:
  virtual ~PgStepGate() = default;
  virtual void BeforeStatement(PgConnection& connection, std::string_view sql) = 0;
  virtual bool Blocked(PgConnection& connection) = 0;
  virtual void Released(PgConnection& connection) = 0;
  virtual void BeforeHook(PgConnection& connection, std::string_view name) = 0;
  virtual void Answered(PgConnection& connection, std::string_view sql);
};

// A connection being opened in the background (libpq's non-blocking connect): the
// constructor sends the start-up message and returns, so the server starts the backend
// while the caller goes on; Open waits for it and gives the connection. A start never
// opened is closed by the destructor. One thread at a time, as a PgConnection.
class PgConnectionStart {
 public:
  PgConnectionStart(const std::string& conninfo, std::string search_path);
  ~PgConnectionStart();
  PgConnectionStart(PgConnectionStart&& other) noexcept;
  PgConnectionStart& operator=(PgConnectionStart&& other) noexcept;
  PgConnectionStart(const PgConnectionStart&) = delete;
  PgConnectionStart& operator=(const PgConnectionStart&) = delete;

  // The connection, with the search_path set; throws DatabaseError, as PgConnection's
  // constructor does, when the server could not be reached. Once only.
  PgConnection Open();

 private:
  pg_conn* conn_ = nullptr;
  int polling_ = 0;  // libpq's PostgresPollingStatusType of the last step
  std::string conninfo_;
  std::string search_path_;
};

class PgConnection {
 public:
  // Connects with a libpq conninfo string; throws DatabaseError when the server cannot be
  // reached. search_path, when given, is set for the session (our own schema).
  explicit PgConnection(const std::string& conninfo, const std::string& search_path = "");
  ~PgConnection();
  PgConnection(PgConnection&& other) noexcept;
  PgConnection& operator=(PgConnection&& other) noexcept;
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // Runs one statement with text parameters ($1, $2, ...), prepared on first use. Traced.
  // Throws PgError with the SQLSTATE on failure. target names the table the statement
  // writes ("Inbox"): a wait with no row lock of its own is reported as on its key.
  PgResult Exec(std::string_view sql, const PgParams& params = {}, std::string_view target = "");
  // Like Exec, but a duplicate key (23505) is a result, not an error. After it, the
  // transaction is aborted (25P02) unless the INSERT ran under a savepoint.
  InsertResult ExecInsert(std::string_view sql, const PgParams& params,
                          std::string_view target = "");
  // The handle of the statement sql (made on the first call, without a round trip; the
  // statement is prepared on the server when it first runs). Exec(sql) finds the same one.
  PgStatement Statement(std::string_view sql);
  // Exec and ExecInsert for a statement found once, with text parameters (none NULL) that
  // need only live for the call: copied into a buffer the connection keeps, so a call
  // allocates nothing once the buffer has grown (and nothing at all when untraced and
  // unwatched). The same statement, trace and waits as Exec(sql, ...).
  PgResult Exec(PgStatement statement, std::initializer_list<std::string_view> params = {},
                std::string_view target = "");
  InsertResult ExecInsert(PgStatement statement, std::initializer_list<std::string_view> params,
                          std::string_view target = "");
  // Runs a script of statements with the simple protocol; not traced (schema set-up).
  void ExecScript(const std::string& sql);
  // Prepares sql (one statement; parameters $1, $2 ...) on the server without running it,
  // as the unnamed statement, and returns how many columns its rows have (0: it returns no
  // rows). Throws PgError with the server's SQLSTATE and message when it does not prepare
  // (a syntax error, a table it may not see, more than one statement). Neither traced nor
  // gated: a check before anything is scheduled.
  int DescribeColumns(const std::string& sql);

  // Opens the side connection that watches this connection's statements for lock waits,
  // and keeps a record of every statement from now on.
  void WatchWaits(const std::string& conninfo);
  // The same with a lock watch the caller keeps (its side connection outlives this
  // connection: an explorer instance that reconnects after a crash reuses it, so a new
  // connection costs one connection, not two). Used by one thread at a time, as ever.
  void WatchWaits(std::shared_ptr<PgLockWatch> watch);
  // The statements run since WatchWaits, in order.
  const std::vector<WatchedStatement>& watched() const { return watched_; }

  bool InTransaction() const;  // PQtransactionStatus: in a block, or in a failed one
  int backend_pid() const;
  // Statements sent to the server by Exec and ExecInsert (one round trip each; preparing a
  // statement the first time is not counted). The bench compares it with its raw baseline.
  int64_t statements_sent() const { return sent_; }
  // Rows the last INSERT, UPDATE or DELETE changed (its command tag's count); a statement
  // without a count (SELECT, BEGIN) leaves it as it was, as sqlite3_changes does.
  int64_t changes() const { return changes_; }

  // Traces every statement and note under instance, as the actor (trace.h kActor*) talking
  // to target ("database"); SetDelivery stamps the delivery's key and number on each step.
  // The same identity a traced SQLite Connection carries.
  void SetTrace(Recorder* recorder, std::string instance);
  void SetTraceRole(std::string actor, std::string target);
  void SetDelivery(DeliveryRef delivery);
  void Note(const std::string& kind, const std::string& detail, const std::string& result);
  // Fills e's instance, pid, backend, actor, target, key and delivery from this connection.
  void Stamp(TraceEvent& e) const;
  // Records the delivery's outcome with the business's verdict (Session::NoteOutcome).
  void NoteOutcome(const std::string& outcome, const std::string& verdict);

  // Closes the connection now: an open transaction is discarded by the server, as when the
  // process dies. Later calls throw.
  void Close() noexcept;
  // Closes the connection like Close, then, when it was inside a transaction, waits until
  // the server's backend for it has exited (its pid gone from pg_stat_activity, asked on
  // the side connection), so its transaction is rolled back and its locks released before
  // anything else runs. Outside a transaction the backend holds no lock and keeps nothing:
  // its exit changes nothing another connection can see, and is not waited for. Needs
  // WatchWaits; without it, the same as Close.
  void CloseAndAwaitExit();

  // Hands this connection's steps to gate (nullptr: none); needs WatchWaits to see waits.
  void SetGate(PgStepGate* gate) { gate_ = gate; }
  PgStepGate* gate() const { return gate_; }
  bool is_open() const { return conn_ != nullptr; }
  // The name under which a waiter this connection's backend blocked records its take in
  // the recorder's table of lock takes (the server's database and the backend's pid).
  std::string holder_key() const { return HolderKey(pid_); }

 private:
  friend class PgConnectionStart;
  // Takes conn, connected: reads its identity and sets search_path.
  PgConnection(pg_conn* conn, const std::string& search_path);
  struct Prepared {
    std::string sql;
    std::string name;        // the server's name for it, "s1", "s2", ...
    bool on_server = false;  // PQprepare done on this connection
  };
  // Text -> index in statements_, found by a string_view (no key made to look one up).
  struct TextHash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };
  // Runs statements_[index] with values_ as its n_params parameters.
  PgResult Run(size_t index, int n_params, std::string_view target, bool duplicate_is_value,
               bool* duplicate);
  size_t Resolve(PgStatement statement) const;  // its index; throws for a foreign one
  // Points values_ at params, copied one after the other (each with its NUL) into params_.
  void CopyParams(std::initializer_list<std::string_view> params);
  // True when the backend waits for a lock now, held by another backend. sent_us: when the
  // statement was sent (the recorder's clock), the earliest its wait can have begun.
  // The first look that finds it waiting records the wait event, and sets wait_at_us_ to
  // its stamp.
  bool CheckWait(WatchedStatement& wait, std::string_view target, int64_t sent_us);
  void CancelAndDrain() noexcept;

  pg_conn* conn_ = nullptr;
  std::shared_ptr<PgLockWatch> watch_;  // the side connection (WatchWaits), or null
  PgStepGate* gate_ = nullptr;
  int pid_ = 0;
  int64_t sent_ = 0;
  // The stamp of the running statement's wait event (when the server says the wait began),
  // -1 while it has none: its waited_us runs from it to the statement's own stamp.
  int64_t wait_at_us_ = -1;
  int64_t changes_ = 0;
  std::vector<Prepared> statements_;
  std::unordered_map<std::string, int, TextHash, std::equal_to<>> by_text_;
  std::string params_;               // the parameters' text of the statement being sent
  std::vector<const char*> values_;  // into params_ (or the caller's strings), for libpq
  // The time a traced step is stamped with (see the definition); blocked_by: the backends a
  // step that waited and went on had waited for (else null); sent_us: when it was sent.
  int64_t StepStamp(const std::vector<int>* blocked_by, int64_t sent_us);
  std::string HolderKey(int backend_pid) const;

  Recorder* recorder_ = nullptr;
  // Names the server's database (host, port, name) in the recorder's table of lock takes.
  std::string server_key_;
  std::string instance_;
  std::string actor_ = kActorConsumer;
  std::string target_ = "database";
  DeliveryRef delivery_;
  std::vector<WatchedStatement> watched_;
};

// Quotes an identifier for SQL ("a""b").
std::string QuoteIdentifier(std::string_view name);
// A string as an SQL literal: E'text', each quote and backslash doubled (read the same
// whatever the server's standard_conforming_strings). Throws DatabaseError on a NUL.
std::string QuoteLiteral(std::string_view text);

}  // namespace dedupsim
