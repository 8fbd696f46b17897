// The failure window turned around: look in the Inbox, record the message (committed on
// its own), then reserve the stock (committed on its own). A crash at
// AfterRecordCommitted leaves a record with no work behind it, so every redelivery is
// skipped and the stock is never reserved: at-most-once instead of at-least-once.
#pragma once

#include "clock.h"
#include "hooks.h"
#include "message.h"
#include "sqlite/connection.h"

namespace dedupsim {

class RecordFirstReserveStock {
 public:
  static constexpr const char* kName = "inventory.reserve-stock";

  RecordFirstReserveStock(Connection& db, Clock& clock) : db_(db), clock_(clock) {}

  Hook after_record_committed;

  // Returns false when the Inbox already held the message (skipped).
  bool Handle(const OrderPlaced& m);

 private:
  Connection& db_;
  Clock& clock_;
};

}  // namespace dedupsim
