// Natural idempotency without any key: a write of an absolute value gives the same state
// however often it runs. AbsoluteReserveStock upserts the order's own reservation row
// (Quantity = the order's quantity), so the book's reserved total, the sum of its rows, is
// the same after one delivery or ten. SetBookReserved writes an absolute value to a row
// that is not the order's own (the book's Reserved): also safe to repeat, but two
// different orders overwrite each other.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/clock.h"
#include "core/message.h"
#include "store/store.h"

namespace dedupsim {

class AbsoluteReserveStock {
 public:
  AbsoluteReserveStock(Store& store, Clock& clock) : store_(store), clock_(clock) {}
  void Handle(const OrderPlaced& m);

 private:
  Store& store_;
  Clock& clock_;
};

class SetBookReserved {
 public:
  explicit SetBookReserved(Store& store) : store_(store) {}
  void Handle(const OrderPlaced& m);

 private:
  Store& store_;
};

// The book's reserved total as the reservation rows say: the sum of their quantities.
int64_t ReservedByRows(Store& store, std::string_view book_id);

}  // namespace dedupsim
