// The failure window turned around: look in the Inbox, record the message (committed on
// its own), then reserve the stock (committed on its own). A crash at
// AfterRecordCommitted leaves a record with no work behind it, so every redelivery is
// skipped and the stock is never reserved: at-most-once instead of at-least-once.
#pragma once

#include <optional>

#include "core/clock.h"
#include "core/hooks.h"
#include "core/message.h"
#include "store/store.h"

namespace dedupsim {

class RecordFirstReserveStock {
 public:
  static constexpr const char* kName = "inventory.reserve-stock";

  RecordFirstReserveStock(Store& store, Clock& clock) : store_(store), clock_(clock) {}

  Hook after_record_committed;

  // Returns false when the Inbox already held the message (skipped).
  bool Handle(const OrderPlaced& m);

 private:
  Store& store_;
  Clock& clock_;
};

}  // namespace dedupsim
