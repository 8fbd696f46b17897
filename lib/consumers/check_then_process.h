// Looks for the message in the Inbox, reserves the stock (committed on its own), then
// records the message. The gap between the two commits is the failure window: a crash at
// AfterStockCommitted leaves the work done and no record, so a redelivery does it again.
#pragma once

#include <optional>

#include "core/clock.h"
#include "core/hooks.h"
#include "core/message.h"
#include "store/store.h"

namespace dedupsim {

class CheckThenProcessReserveStock {
 public:
  static constexpr const char* kName = "inventory.reserve-stock";

  CheckThenProcessReserveStock(Store& store, Clock& clock) : store_(store), clock_(clock) {}

  Hook after_stock_committed;

  // Returns false when the Inbox already held the message (skipped).
  bool Handle(const OrderPlaced& m);

 private:
  Store& store_;
  Clock& clock_;
};

}  // namespace dedupsim
