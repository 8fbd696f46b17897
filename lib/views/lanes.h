// The recorded steps of one run regrouped for the views: who did what (a lane per actor:
// each consumer instance and process, a restarted process as its own lane, the producer,
// the broker, the database, the scenario's checks), which transactions ran from BEGIN to
// COMMIT or ROLLBACK, where a statement waited for the write lock, where each delivery
// began and how it ended. Built from the events' own fields, so it works for any scenario.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/trace.h"
#include "views/step_text.h"

namespace dedupsim {

// One statement of a span: when it ended, what it was, what came back.
struct SpanStep {
  int64_t at_us = 0;
  std::string statement;  // StepLabel: "INSERT Inbox"
  std::string result;
  bool control = false;  // BEGIN, COMMIT or ROLLBACK
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

// A statement that found the database locked: from its first busy call to its end.
struct LockWait {
  int64_t start_us = 0;
  int64_t end_us = 0;
  int64_t waited_us = 0;  // the busy handler's own measure
  std::string statement;  // StepLabel
  std::string result;     // the statement's result once the wait ended ("" if never)
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
    kBroker,   // a broker or producer step: send, deliver, ack, nack, dead-letter, replay
    kOther
  };
  Kind kind = Kind::kOther;
  int64_t at_us = 0;
  std::string text;
  bool bad = false;  // kBroker/kOutcome: ack lost, dead-lettered, dropped, ...
};

struct Lane {
  std::string key;    // LaneKey of its events
  std::string title;  // "Consumer A", "Consumer A (restarted)", "Broker", "scenario check"
  std::string actor;  // ActorOf its events
  std::string instance;
  int pid = 0;
  bool secondary = false;  // the scenario's own checks: drawn as such
  std::vector<Span> spans;
  std::vector<LockWait> waits;
  std::vector<Mark> marks;
  int64_t first_us = 0;
  int64_t last_us = 0;
};

// Which lane an event belongs to: one lane per consumer instance and process; one each for
// the producer, broker, operator, database, set-up and the scenario's checks. "" for events
// that belong to no lane (sub-run titles, clock marks).
std::string LaneKey(const TraceEvent& e);

// Lanes in order of their first step, titled (a consumer instance seen in a second process
// after its first one died is "(restarted)").
std::vector<Lane> BuildLanes(const std::vector<TraceEvent>& events, ShortIds& ids);

// The text of a broker or producer step for pictures: "deliver m1 (delivery 2)", "ack m1",
// "ack lost: m1 back in the queue", ...; *bad when it is a failure to deliver or settle.
std::string BrokerStepText(const TraceEvent& e, ShortIds& ids, bool* bad);

// The events in an order a reader can follow: a statement that waited for the lock and
// was stamped within 2 ms before another instance's COMMIT or ROLLBACK gets that COMMIT or
// ROLLBACK moved before it (it could only go on once that transaction ended; stamps of two
// threads that end steps at nearly the same moment may come out either way, where the
// recorder could not clamp them). Each instance's own steps keep their order: the waiting
// statement is never moved past its own later steps, nor the COMMIT past its own earlier.
std::vector<TraceEvent> CausalOrder(std::vector<TraceEvent> events);

}  // namespace dedupsim
