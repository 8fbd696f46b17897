// The consumer with no dedup at all: every delivery adds the quantity to Reserved.
#pragma once

#include "message.h"
#include "sqlite/connection.h"

namespace dedupsim {

class NaiveReserveStock {
 public:
  explicit NaiveReserveStock(Connection& db) : db_(db) {}
  void Handle(const OrderPlaced& m);

 private:
  Connection& db_;
};

// Adds m.quantity to the book's Reserved in the current transaction (or its own, when
// none is open). Shared by the consumers that reserve stock.
void AddReserved(Connection& db, const OrderPlaced& m);

}  // namespace dedupsim
