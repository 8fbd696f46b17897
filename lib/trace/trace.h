// The step trace: every statement, hook, crash and commit of every consumer instance, in
// the order it happened. Views (the --trace timeline, JSON, diagrams, the step-through
// page) are built from these events; nothing prints while a scenario runs. Each event
// carries its meaning from the moment it is recorded: who did it (actor), what kind of step
// it was (op: BEGIN, INSERT, deliver, ack, ...), which table, for which message (key) and
// in which of the broker's deliveries, so no view has to read it back out of SQL text.
// Recorder is safe for concurrent use by threads; events from child processes are appended
// by the parent after the child reports.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dedupsim {

struct TraceEvent {
  int64_t at_us = 0;       // microseconds since the recorder's origin
  std::string instance;    // "A", "B", ... ; "" for set-up work
  int pid = 0;             // the process that did the step
  std::string kind;        // "sql", "open" (a delivery's connection), "hook", "wait",
                           // "crash", "died", "recover", "send"
  std::string detail;      // statement text, hook name, or what happened
  std::string result;      // "ok", "row", "constraint 1555", "busy", ...
  // A statement that waited for a lock: from its "wait" event (SQLite's busy handler's
  // first call; PostgreSQL: when the server says the wait began) to this event's own stamp,
  // the span the pictures draw as the wait; else the busy handler's own time, if any.
  int64_t waited_us = 0;
  // SQLite's busy handler calls during this statement, counted by the connection's handler
  // (0 when it was armed and never called); absent wherever nothing counted them (another
  // database, a step that is not a statement): never a 0 that nobody measured.
  std::optional<int64_t> busy_calls;

  // What the step means, set where it is recorded. Empty / 0 when not known (events made
  // by hand or by older code); ActorOf() then infers the actor from the instance.
  std::string actor;   // kActor*: "consumer", "broker", "probe", "setup", "cleanup", ...
  std::string op;      // sql: "BEGIN", "COMMIT", "ROLLBACK", "SELECT", "INSERT", "UPDATE",
                       // "DELETE", "PRAGMA", "SAVEPOINT", "RELEASE", "ROLLBACK TO",
                       // "OTHER" (from SQLite's own reading of the
                       // statement at prepare time); broker: "send", "drop", "deliver", "ack",
                       // "abandon", "ack-lost" (an ack sent and lost), "unacked" (released
                       // with no ack from anyone), "dead-letter" (a consumer's own),
                       // "dead-lettered" (the queue's own, seen arriving in its dead
                       // letters), "give-up" (NATS: MaxDeliver reached, no dead letter),
                       // "replay"; consumer: "outcome"
  std::string table;   // the table a statement writes, else the first it reads
  std::string target;  // what a statement talks to: "database" or a side store ("cache",
                       // "email provider"), and the store whose write lock a "lock" event
                       // took or released; "" for other steps that are not statements
  std::string key;     // the full MessageId the step works for, "" if none
  // sql: the values bound to the statement's parameters, ":MessageId=59d4..., :Now=..."
  // (a traced SQLite connection's; "" when none).
  std::string values;
  int delivery = 0;    // the broker's number for this delivery of key (1 = first), 0: none
  // Which of the messages the broker stored under key this step is about: 1 for the first
  // send it accepted, 2 for the next (a dispatcher's resend, a producer's duplicate, an
  // operator's replay), each with its own delivery count; 0: not known (a broker that does
  // not say which stored message it delivers).
  int copy = 0;

  // What a statement did, read from the database as it answered (both backends), so no
  // view reads it back out of `result`:
  int64_t rows = -1;   // SELECT: rows read; INSERT, UPDATE, DELETE: rows changed; -1: unknown
  // INSERT: of its rows, those that replaced a row holding the same key (SQLite's INSERT OR
  // REPLACE deleted the conflicting row, seen by SQLite's preupdate hook); 0: none, or not
  // known (a SQLite built without the hook).
  int64_t replaced = 0;
  // INSERT: of its rows, those that updated the row already holding the key instead of going
  // in (ON CONFLICT ... DO UPDATE), as SQLite's preupdate hook saw each row: the database's
  // own count (sqlite3_changes, PostgreSQL's "INSERT 0 1") is the same either way. 0: none.
  int64_t updated = 0;
  // INSERT: the statement could update a row instead (an ON CONFLICT ... DO UPDATE) and the
  // database did not say which each row did (PostgreSQL, whose command tag says "INSERT 0
  // 1" either way; a SQLite built without the preupdate hook): its rows are said "inserted
  // or updated", never "inserted".
  bool inserted_or_updated = false;
  // INSERT's updated rows, UPDATE's rows: those the update left with every value as it was
  // (an upsert repeated with the same values), as SQLite's preupdate hook compared them; 0:
  // none, or not known (PostgreSQL; a SQLite without the hook).
  int64_t unchanged = 0;
  std::string value;   // a read of one row of one column: "count(*) = 0", "Reserved = 2"
  std::string error;   // the statement's error code: SQLite's extended code ("1555", "5"),
                       // PostgreSQL's SQLSTATE ("23505", "40001", "25P02"); "" when it succeeded
  // A lock wait (a "wait" event, and the statement that waited), as the database said it:
  std::string waited_on;   // "the write lock" (SQLite's, on the whole file); PostgreSQL:
                           // "key Inbox" (a unique-index check), "row StockItems"
  std::string lock_mode;   // PostgreSQL: the lock asked for and not granted, "ShareLock"
  std::string wait_event;  // PostgreSQL: pg_stat_activity.wait_event, "transactionid", "tuple"
  int blocked_by = 0;      // PostgreSQL: the backend (pid) that held it
  // PostgreSQL's "wait" event: when the lock watch saw the statement waiting, where the
  // server said how long it had waited by then (pg_locks.waitstart); at_us is then when
  // the wait began (not before the statement was sent). -1: the watch's moment is at_us.
  int64_t seen_us = -1;
  // PostgreSQL: the server backend (PQbackendPID) of the connection that did the step, so a
  // wait's blocked_by names the actor that owns that backend; 0: none (SQLite, a step not
  // made on a server connection). The database's step that ended a session (the server's
  // release of a dead connection, a session-ended by a timeout): that session's backend,
  // the server process that did it (its owner is the actor whose steps ran on it).
  int backend = 0;
  // A consumer's process: 1 for an instance's first process, 2 for the one started again
  // after it died, ...; 0: not a process that was ever started again (the common case).
  int incarnation = 0;
  // The business's verdict on the step, given where it was recorded (a delivery's outcome):
  // kVerdictRight, kVerdictWrong, or "" (not judged). Views colour it, never decide it.
  std::string verdict;
  // The recorder's count when the event was recorded, from 1: equal stamps keep the order
  // they were recorded in, and a view can name one event (the page's table reads).
  int64_t seq = 0;
};

// A step's verdict for the business: right (a message took effect once, a duplicate was
// refused, a half-done send was flagged), wrong (a message took effect twice, or was lost
// or silenced). The same two words colour the run's lines (FigureMark).
inline constexpr const char* kVerdictRight = "right";
inline constexpr const char* kVerdictWrong = "wrong";

// Actors. A consumer instance is "consumer" (its name in TraceEvent::instance); the
// scenario's own measurement reads are "probe", never a consumer step.
inline constexpr const char* kActorConsumer = "consumer";
inline constexpr const char* kActorBroker = "broker";
inline constexpr const char* kActorProducer = "producer";
inline constexpr const char* kActorProbe = "probe";
inline constexpr const char* kActorSetup = "setup";
inline constexpr const char* kActorDatabase = "database";
inline constexpr const char* kActorScenario = "scenario";  // sub-run titles ("part" events)
inline constexpr const char* kActorDispatcher = "dispatcher";     // an outbox's dispatcher
inline constexpr const char* kActorOperator = "operator";  // replays dead letters
inline constexpr const char* kActorEmailProvider = "email provider";  // the simulated provider's
                                                                      // own steps

// The actor of e: its own field, or, for events recorded without one, inferred from the
// instance ("" set-up, "broker" the broker, anything else a consumer).
std::string ActorOf(const TraceEvent& e);
// A name for pictures: "Consumer A", "Broker", "Producer", "scenario check", "set-up", or
// the instance's own name ("cleanup", "inventory").
std::string ActorTitle(const TraceEvent& e);
// The ops of a savepoint's statements (both backends read them so): SAVEPOINT, RELEASE
// [SAVEPOINT] and ROLLBACK TO [SAVEPOINT], which undoes the savepoint's work and keeps the
// transaction open (not a ROLLBACK).
inline constexpr const char* kOpSavepoint = "SAVEPOINT";
inline constexpr const char* kOpRelease = "RELEASE";
inline constexpr const char* kOpRollbackTo = "ROLLBACK TO";

// The op of a statement event, or "" (events recorded without one).
inline bool IsSqlOp(const TraceEvent& e, std::string_view op) {
  return e.kind == "sql" && e.op == op;
}

// One delivery of one message, as the broker numbered it.
struct DeliveryRef {
  std::string key;  // MessageId
  int number = 0;   // 1 for the first delivery; 0: not a delivery
  int copy = 0;     // which stored message of key (TraceEvent::copy); 0: not known
};

class Recorder {
 public:
  Recorder();
  explicit Recorder(std::chrono::steady_clock::time_point origin);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  std::chrono::steady_clock::time_point origin() const { return origin_; }
  int64_t MicrosSinceOrigin() const;

  void Record(TraceEvent event);

  // Write-lock hand-overs on one file, between connections of this process and of the
  // processes forked from it (--instances processes, crash children). Each connection
  // stamps its own "taken" and "released" when its step returns, so a holder preempted
  // between SQLite's release of the lock and its own stamp would be drawn releasing after
  // the next connection took the lock. LockTaken stamps a take (owner: the connection) and
  // records it, in one step, in a table shared with every process forked after this
  // recorder was made; it returns the stamp. ReleaseStamp gives the time to stamp a release
  // with: now_us, or, if another owner (in any of those processes) took the lock on file
  // since the release step began, just before the first such take (the release happened
  // before it, within the step). now_us must be read before the call: a take recorded
  // after the call began is stamped later than it.
  int64_t LockTaken(const std::string& file, const void* owner);
  int64_t ReleaseStamp(const std::string& file, const void* owner, int64_t step_started_us,
                       int64_t now_us) const;
  // The time point t in this recorder's microseconds.
  int64_t MicrosAt(std::chrono::steady_clock::time_point t) const;
  // Records an event stamped now, from this process.
  void Note(const std::string& instance, const std::string& kind, const std::string& detail,
            const std::string& result);
  std::vector<TraceEvent> Events() const;  // sorted by time, then by the order recorded
  void Clear();
  // The latest at_us among the events recorded so far by instance in process pid; -1 when
  // it has recorded none (since Clear).
  int64_t LastAtOf(int pid, const std::string& instance) const;

  // Marks where a scenario driven by a ManualClock set its simulated time ("day 15",
  // "+1 min"): a "clock" event; the timeline then draws steps on a logical axis. Its stamp
  // is later than every event recorded before it and earlier than any this process stamps
  // after it returns (it waits out the microsecond).
  void MarkTime(const std::string& label);

  // Marks where a scenario waited in real time for a real broker's own clock (a NATS
  // duplicate window): a "waited" event, what says how long it measured ("the producer
  // waited 1201 ms"). Unlike MarkTime, the timeline keeps its real-time axis.
  void MarkRealWait(const std::string& what);

  // Starts a titled sub-run ("naive", "inbox"): a "part" event the views separate on.
  void BeginPart(const std::string& title);
  // Notes that the run's set-up reset the tables (between lessons or sub-runs): a "reset"
  // event of the set-up, what says what it left ("tables emptied; Dune stocked with 10").
  // Recorded after the reset, so the step-through page shows the tables it left.
  void NoteReset(const std::string& what);

  // The broker offers each delivery it hands out; the next consumer connection opened for
  // it (OpenTraced in scenarios) takes it, so its steps carry the broker's number. An offer
  // not taken is dropped by the next one, or by the settling of the delivery.
  void OfferDelivery(DeliveryRef delivery);
  DeliveryRef TakeOfferedDelivery();

  // Called after each event recorded in the process that set it (not for events a child
  // reported): the step-through page's probe reads the tables there. Not called for the
  // probe's own events. The observer must be set before any thread records.
  using Observer = std::function<void(const TraceEvent&)>;
  void SetObserver(Observer observer);

 private:
  std::chrono::steady_clock::time_point origin_;
  mutable std::mutex mu_;
  std::vector<TraceEvent> events_;
  int64_t next_seq_ = 1;
  std::map<std::pair<int, std::string>, int64_t> last_at_;  // LastAtOf
  // The lock takes, in memory mapped MAP_SHARED before any fork: the recorder's copy in a
  // forked child points at the same table (trace.cpp).
  struct SharedTakes;
  SharedTakes* takes_ = nullptr;
  DeliveryRef offered_;
  Observer observer_;
  int observer_pid_ = 0;
  std::mutex observer_mu_;  // one observer call at a time
};

// Records a note (not a statement) on recorder: stamped carries who wrote it (instance, actor,
// key, delivery), as the connection that notes it stamps its statements.
// at_us: the time to stamp it with; -1: now, except for an "outcome": the time of the
// instance's last step (its COMMIT, its ROLLBACK), which the outcome is the end of. So a
// delivery's outcome sorts right after its last step, before whatever another thread did
// after that step, whichever thread recorded first: the order follows events, not the
// scheduler.
void RecordNote(Recorder& recorder, TraceEvent stamped, const std::string& kind,
                const std::string& detail, const std::string& result, int64_t at_us = -1);

}  // namespace dedupsim
