// Natural idempotency without any key: a write of an absolute value gives the same state
// however often it runs. AbsoluteReserveStock upserts the order's own reservation row
// (Quantity = the order's quantity), so the book's reserved total, the sum of its rows, is
// the same after one delivery or ten. SetBookReserved writes an absolute value to a row
// that is not the order's own (the book's Reserved): also safe to repeat, but two
// different orders overwrite each other.
#pragma once

#include <cstdint>
#include <string_view>

#include "clock.h"
#include "message.h"
#include "sqlite/connection.h"

namespace dedupsim {

class AbsoluteReserveStock {
 public:
  AbsoluteReserveStock(Connection& db, Clock& clock) : db_(db), clock_(clock) {}
  void Handle(const OrderPlaced& m);

 private:
  Connection& db_;
  Clock& clock_;
};

class SetBookReserved {
 public:
  explicit SetBookReserved(Connection& db) : db_(db) {}
  void Handle(const OrderPlaced& m);

 private:
  Connection& db_;
};

// The book's reserved total as the reservation rows say: the sum of their quantities.
int64_t ReservedByRows(Connection& db, std::string_view book_id);

}  // namespace dedupsim
