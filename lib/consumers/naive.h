// The consumer with no dedup at all: every delivery adds the quantity to Reserved.
#pragma once

#include "message.h"
#include "sqlite/connection.h"

namespace dedupsim {

class Statement;

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
// The same on the statement AddReservedStatement returned (a hot path keeps it).
void AddReserved(Statement& update, const OrderPlaced& m);
Statement& AddReservedStatement(Connection& db);

}  // namespace dedupsim
