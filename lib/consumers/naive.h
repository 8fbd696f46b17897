// The consumer with no dedup at all: every delivery adds the quantity to Reserved.
#pragma once

#include <optional>

#include "core/message.h"
#include "store/store.h"

namespace dedupsim {

class NaiveReserveStock {
 public:
  explicit NaiveReserveStock(StockStore& store) : store_(store) {}
  void Handle(const OrderPlaced& m);

 private:
  StockStore& store_;
};

// Adds m.quantity to the book's Reserved in the current transaction (or its own, when
// none is open). Shared by the consumers that reserve stock.
void AddReserved(StockStore& store, const OrderPlaced& m);

}  // namespace dedupsim
