// The explorer's claim-last row: lean on purpose, without the reporting statements of
// lib/consumers/claim_last.h (they would add steps, and schedules, that teach nothing here).
// The record-first row uses lib/consumers/record_first.h itself.
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
