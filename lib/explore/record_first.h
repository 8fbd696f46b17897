// Two variants of the Inbox that the post's exercises ask about, kept here (not in
// lib/consumers/) because only the explorer runs them.
//
// RecordFirstReserveStock commits the Inbox row on its own, then reserves the stock in a
// second commit: the check-then-process window turned around. A crash between the two
// (hook AfterRecordCommitted) leaves the record and no work; the redelivery finds the
// record and skips, so the order is never reserved: at most once.
//
// ClaimLastReserveStock keeps the one transaction but writes the Inbox row after the stock
// update (the post's second exercise). It stays correct: a second copy blocks on the
// first statement that writes, which is now the UPDATE of the stock, and once the first
// commits its INSERT hits the key and it rolls its update back. It holds the write lock
// from the stock update on, and a duplicate does the update before it finds out.
#pragma once

#include "clock.h"
#include "hooks.h"
#include "message.h"
#include "sqlite/connection.h"

namespace dedupsim::explore {

class RecordFirstReserveStock {
 public:
  static constexpr const char* kName = "inventory.reserve-stock";

  RecordFirstReserveStock(Connection& db, Clock& clock) : db_(db), clock_(clock) {}

  Hook after_record_committed;

  // True when this delivery recorded the message (and then did the work); false when the
  // Inbox already had it.
  bool Handle(const OrderPlaced& m);

 private:
  Connection& db_;
  Clock& clock_;
};

class ClaimLastReserveStock {
 public:
  static constexpr const char* kName = "inventory.reserve-stock";

  ClaimLastReserveStock(Connection& db, Clock& clock) : db_(db), clock_(clock) {}

  Hook before_commit;

  // True when this delivery did the work; false when it was a duplicate (rolled back).
  bool Handle(const OrderPlaced& m);

 private:
  Connection& db_;
  Clock& clock_;
};

}  // namespace dedupsim::explore
