// Natural idempotency, no inbox: the reservation is a business row keyed on (OrderId,
// BookId) in StockReservations. In one transaction the consumer inserts the reservation
// and adds its quantity to StockItems.Reserved; a second reservation for the same order
// line hits the key and the transaction is rolled back. The order id, not the message id,
// is what dedups, so a producer that publishes the same order twice under two MessageIds
// is caught too.
#pragma once

#include <optional>

#include "core/clock.h"
#include "core/hooks.h"
#include "core/message.h"
#include "store/store.h"

namespace dedupsim {

class NaturalKeyReserveStock {
 public:
  NaturalKeyReserveStock(Store& store, Clock& clock) : store_(store), clock_(clock) {}

  Hook before_commit;

  // True when this delivery reserved; false when the order line was already reserved.
  bool Handle(const OrderPlaced& m);

 private:
  Store& store_;
  Clock& clock_;
};

}  // namespace dedupsim
