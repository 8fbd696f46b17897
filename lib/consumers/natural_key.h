// Natural idempotency, the post's third exercise: a StockReservations table unique on
// (OrderId, BookId) keeps the dedup record in the business data itself. In one
// transaction the consumer inserts the reservation first (claiming the key, as the inbox
// does), then adds the quantity to Reserved. A second reservation for the same order and
// book is refused by the primary key: Handle returns false, a success to ack.
//
// Unlike the inbox this also catches a producer duplicate that carries a new MessageId
// for the same order; the price is a key designed for this one message type.
#pragma once

#include "hooks.h"
#include "message.h"
#include "sqlite/connection.h"
#include "sqlite/transaction.h"

namespace dedupsim {

class NaturalKeyReserveStock {
 public:
  explicit NaturalKeyReserveStock(Connection& db) : db_(db) {}

  Hook before_commit;
  TransactionKind begin = TransactionKind::kDeferred;

  // True when this delivery reserved the stock; false when the order was already reserved.
  bool Handle(const OrderPlaced& m);

 private:
  Connection& db_;
};

}  // namespace dedupsim
