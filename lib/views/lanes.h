// The recorded steps of one run regrouped for the views: who did what (a lane per
// instance and process), which transactions ran from BEGIN to COMMIT or ROLLBACK, where a
// statement waited for the write lock, and where each delivery began. Built from the
// events alone, so it works for any scenario.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace.h"

namespace dedupsim {

// One statement of a span: when it ended, what it was, what came back.
struct SpanStep {
  int64_t at_us = 0;
  std::string statement;  // abbreviated
  std::string result;
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
  std::string statement;  // abbreviated
  std::string result;     // the statement's result once the wait ended ("" if never)
};

// A point worth marking on a lane.
struct Mark {
  enum class Kind { kDelivery, kHook, kCrash, kSend, kDied, kRecover, kFailure, kOther };
  Kind kind = Kind::kOther;
  int64_t at_us = 0;
  std::string text;
};

struct Lane {
  std::string instance;  // "" for set-up work
  int pid = 0;
  std::vector<Span> spans;
  std::vector<LockWait> waits;
  std::vector<Mark> marks;
  int64_t first_us = 0;
  int64_t last_us = 0;
};

// Lanes in order of their first step.
std::vector<Lane> BuildLanes(const std::vector<TraceEvent>& events);

// For each event, the number of the delivery that starts there (1, 2, ...), or 0. A
// delivery starts where a consumer opens its connection (an "open" step), or at the first
// step of an instance that opened none (instances run by RunInstances).
std::vector<int> DeliveryStarts(const std::vector<TraceEvent>& events);

// The events in an order a reader can follow: a statement that waited for the lock and
// was stamped within 2 ms before another instance's COMMIT or ROLLBACK is moved after it
// (it could only go on once that transaction ended; the stamps of two threads that end
// steps at nearly the same moment may come out either way).
std::vector<TraceEvent> CausalOrder(std::vector<TraceEvent> events);

}  // namespace dedupsim
