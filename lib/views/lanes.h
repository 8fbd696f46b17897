// The recorded steps of one run regrouped for the views: who did what (a lane per actor:
// each consumer instance and process, the producer, the broker, a dispatcher, the email
// provider, the database, the scenario's checks), which transactions ran from BEGIN to
// COMMIT or ROLLBACK, where a statement waited for a lock, where each delivery began and
// how it ended. Built from the events' own fields, so it works for any scenario; every text
// is DescribeStep's (views/event_text.h), so it says what the trace says.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "trace/trace.h"
#include "views/event_text.h"
#include "views/step_text.h"

namespace dedupsim {

// One statement of a span: when it ended, what it was, what came back.
struct SpanStep {
  int64_t at_us = 0;
  std::string statement;  // StepLabel: "INSERT Inbox"
  std::string result;     // StatementResult: "1 row inserted", "duplicate key (1555)"
  bool control = false;   // BEGIN, COMMIT or ROLLBACK
  bool failed = false;    // it returned an error
};

// A transaction, or one statement that ran in autocommit mode.
struct Span {
  enum class Kind { kTransaction, kAutocommit };
  enum class End {
    kCommit,     // COMMIT succeeded
    kRollback,   // ROLLBACK ran
    kDied,       // the process died with the transaction open
    kOpen,       // still open when the record ends
    kStatement,  // an autocommit statement: it commits itself
  };
  Kind kind = Kind::kAutocommit;
  End end = End::kStatement;
  int64_t start_us = 0;
  int64_t end_us = 0;
  std::vector<SpanStep> steps;  // in order, BEGIN and COMMIT/ROLLBACK included
  std::string end_detail;       // kDied: how the process died
  bool crashed = false;         // a crash point was reached inside it
};

// A statement that waited for a lock: from the wait's first sign (SQLite's busy handler, the
// server's wait seen from the side connection) to the statement's end.
struct LockWait {
  int64_t start_us = 0;
  int64_t end_us = 0;
  int64_t waited_us = 0;  // the database's own measure
  std::string statement;  // StepLabel
  std::string result;     // the statement's result once the wait ended ("" if never)
  std::string target;     // WaitTarget: "the write lock", "key Inbox (ShareLock, ...)"
};

// A point worth marking on a lane.
struct Mark {
  enum class Kind {
    kDelivery,  // a consumer's delivery begins
    kHook,
    kCrash,
    kSend,  // an email sent
    kDied,
    kRecover,
    kFailure,
    kOutcome,  // what the consumer made of its delivery
    kBroker,   // a broker, producer or operator step: send, deliver, dead-letter, replay
    kSettle,   // the consumer settles its delivery with the broker: ack, nack, dead-letter
    kAckLost,  // the consumer's ack, lost on the way: the broker will deliver again
    kWait,     // a lock wait began (drawn with the wait's bar)
    kOther
  };
  Kind kind = Kind::kOther;
  int64_t at_us = 0;
  std::string text;  // DescribeStep's Text()
  Tone tone = Tone::kPlain;
  bool failed = false;   // a statement's error
  std::string key;       // the message it is about, "" if none
  int delivery = 0;      // and its delivery, 0 if none
};

// A stretch of time a lane's connection held a store's write lock (SQLite): from its "lock"
// event "write lock taken" to "write lock released" (the lane's last stamp if never seen).
struct LockHeld {
  int64_t start_us = 0;
  int64_t end_us = 0;
  std::string target;  // the store: "database", "cache"
};

// One step of a lane in words, for a picture that lists them (the timeline's cards).
struct LaneStep {
  int64_t at_us = 0;
  std::string text;  // "INSERT Inbox: 1 row inserted", "m1 delivery 2", "outcome: Skipped"
  Tone tone = Tone::kPlain;
  bool failed = false;     // a statement's error
  bool delivery = false;   // a delivery begins here (the broker's number in text)
  bool wait = false;       // a lock wait begins here
  std::string kind;        // the event's kind
  size_t event = 0;        // the index of the event it is said at (the events' order)
};

struct Lane {
  std::string key;    // LaneKey of its events
  std::string title;  // ActorName: "Consumer A", "Broker", "Dispatcher", "scenario check"
  std::string sub;    // under the title: its process ("main process", "child process 1";
                      // "pid 123" with WordOptions::pids), "not a consumer step", or ""
  std::string actor;  // ActorOf its events
  std::string instance;
  int pid = 0;
  bool secondary = false;  // the scenario's own checks: drawn as such
  std::vector<Span> spans;
  std::vector<LockWait> waits;
  std::vector<LockHeld> held;  // its write-lock holds, in order
  std::vector<Mark> marks;
  std::vector<LaneStep> steps;  // every step drawn on this lane, in order (no lock notes)
  int64_t first_us = 0;
  int64_t last_us = 0;
};

// Which lane an event belongs to: one lane per consumer instance and process; one each for
// the producer, broker, operator, dispatcher, email provider, database, set-up and the
// scenario's checks. A send is its sender's step. "" for events that belong to no lane
// (sub-run titles, clock marks, resets).
std::string LaneKey(const TraceEvent& e);

// Whether a broker step is the consumer's settling of its delivery (ack, nack, a lost ack,
// its own dead-lettering): drawn on the lane of the consumer that received that delivery.
bool IsSettle(const TraceEvent& e);

// Each event's lane, in event order: LaneKey, except a settle, which is the lane of the
// consumer that opened that delivery before it, when the settle was sent from that
// consumer's process. A settle before any consumer held the delivery (an ack the broker
// gave up on in advance) stays the broker's, and so does one another process sent (a
// child of --instances processes holds no broker connection: the main process settles
// what the child decided).
std::vector<std::string> StepLaneKeys(const std::vector<TraceEvent>& events);

// Which statements are writes that committed by themselves, in event order: a write that
// succeeded outside its lane's open transaction on that store, or on another connection of
// the same consumer (a second connection beside an open transaction). Every view says
// "(autocommit)" after them, from this one decision.
std::vector<bool> AutocommitWrites(const std::vector<TraceEvent>& events);

// The calls to the email provider whose request came before the provider's own steps: a
// call ("send", "reconcile") is one step, recorded when it returned, and the provider's
// steps made during it (a run of them right before the call's step, in its process) come
// first in the record. Maps the index of the provider's first step of a call to the index
// of the call, so that a view says the request there and the answer at the call.
std::map<size_t, size_t> ProviderCallsAsked(const std::vector<TraceEvent>& events);

// The words of a step as said on lane: a settle drawn on the broker's lane (no consumer of
// the process that sent it held the delivery: an ack sent before the consumer took it, a
// settle the main process sent for a child) is said as the broker got it ("an ack for m1
// arrives") where its receipt was seen (the simulation's queue, a server's reply), as sent
// where it got no reply ("an ack for m1 sent: no reply"), never as the broker's own act;
// every other step's words are DescribeStep's. Every view draws such a settle there (the
// diagram as a note over the Broker, not as an arrow from the consumer).
StepWords WordsOnLane(const TraceEvent& e, StepWords words, const std::string& lane);

// Where the pictures say each write-lock take and release (a "lock" event, SQLite): with
// the statement it came with, the next step of its lane when that is a statement ("1 row
// inserted, write lock taken"), so a lock's change is part of its statement and never a
// step of its own; else alone (a release at a close: the connection ended with its
// transaction). Both keyed by event index.
struct LockNotes {
  std::map<size_t, std::string> with_statement;  // statement -> "write lock taken"
  std::map<size_t, size_t> statement_of;         // lock event -> the statement it came with
  std::set<size_t> alone;                        // lock events said as steps of their own
};
LockNotes PlaceLockNotes(const std::vector<TraceEvent>& events);
// A statement's result with the lock change it came with, if any: "duplicate key (1555),
// write lock taken". The one joining of the two for every picture.
std::string WithLockNote(const std::string& result, const LockNotes& notes, size_t statement);

// Lanes in order of their first step, titled by ActorName.
std::vector<Lane> BuildLanes(const std::vector<TraceEvent>& events, ShortIds& ids,
                             const WordOptions& options = {});

// Repeated deliveries folded, for a picture that must stay readable (the timeline): where
// three or more deliveries of one message in a row did the same steps with the same
// results (poison-message's ten failures), the first is kept and the rest are replaced by
// one "fold" event (instance and pid of the consumer that received them, detail "deliveries
// 2 to 9 of m1, each as delivery 1", result what each ended with). Events of other messages
// in between are kept.
std::vector<TraceEvent> FoldRepeatedDeliveries(const std::vector<TraceEvent>& events,
                                               ShortIds& ids);

// The events in an order a reader can follow: a statement that waited for the lock and
// was stamped within 2 ms before another instance's COMMIT or ROLLBACK gets that COMMIT or
// ROLLBACK moved before it, with the delivery outcome stamped with that COMMIT (it could
// only go on once that transaction ended; stamps of two
// threads that end steps at nearly the same moment may come out either way, where the
// recorder could not clamp them). Each instance's own steps keep their order: the waiting
// statement is never moved past its own later steps, nor the COMMIT past its own earlier.
//
// And a server's end of a session (IsServerSessionEnd: a dead connection's transaction
// rolled back when the server saw it close, a session ended by a timeout), noted after the
// fact and stamped at the answer of the statement it let go on, is put before that
// statement (ServerEndsFirst): a holder's release comes before the waiter it let go on.
std::vector<TraceEvent> CausalOrder(std::vector<TraceEvent> events);

// PostgreSQL: the database's step that ended one session on the server (its backend in
// TraceEvent::backend, the server process that did it): "session-ended" (the server ended
// the session, a timeout, while its process lived on) or a "recover" noted when a dead
// process's connection closed. Its locks were released there.
bool IsServerSessionEnd(const TraceEvent& e);
// The lane whose own steps (not the database's) ran on the server backend `backend`, the
// latest such step before index `before`; "" when none did.
std::string LaneOfBackend(const std::vector<TraceEvent>& events, size_t before, int backend);
// Each server session end (IsServerSessionEnd) recorded after the statement it let go on
// moved just before it: the first statement, after the session owner's last step, stamped
// no earlier than the end (the answer it was noted at; the events are in time order, so
// only a statement stamped in the same microsecond, recorded first, is moved past). Every
// other event keeps its place; used by CausalOrder and the trace.
std::vector<TraceEvent> ServerEndsFirst(std::vector<TraceEvent> events);

}  // namespace dedupsim
