// Natural idempotency, no inbox: the reservation is a business row keyed on (OrderId,
// BookId) in StockReservations. In one transaction the consumer inserts the reservation
// and adds its quantity to StockItems.Reserved; a second reservation for the same order
// line hits the key and the transaction is rolled back. The order id, not the message id,
// is what dedups, so a producer that publishes the same order twice under two MessageIds
// is caught too.
#pragma once

#include "clock.h"
#include "hooks.h"
#include "message.h"
#include "sqlite/connection.h"

namespace dedupsim {

class NaturalKeyReserveStock {
 public:
  NaturalKeyReserveStock(Connection& db, Clock& clock) : db_(db), clock_(clock) {}

  Hook before_commit;

  // True when this delivery reserved; false when the order line was already reserved.
  bool Handle(const OrderPlaced& m);

 private:
  Connection& db_;
  Clock& clock_;
};

}  // namespace dedupsim
