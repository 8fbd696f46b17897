// The consumer with no dedup at all: every delivery adds the quantity to Reserved.
#pragma once

#include <optional>

#include "core/message.h"
#include "sqlite/store.h"
#include "store/store.h"

namespace dedupsim {

class NaiveReserveStock {
 public:
  explicit NaiveReserveStock(StockStore& store) : store_(store) {}
  // On SQLite: a store over db, which must outlive the consumer.
  explicit NaiveReserveStock(Connection& db) : own_(std::in_place, db), store_(*own_) {}
  void Handle(const OrderPlaced& m);

 private:
  std::optional<SqliteStore> own_;
  StockStore& store_;
};

// Adds m.quantity to the book's Reserved in the current transaction (or its own, when
// none is open). Shared by the consumers that reserve stock.
void AddReserved(StockStore& store, const OrderPlaced& m);
// The same on an SQLite connection, for the consumers not yet on the store seam.
void AddReserved(Connection& db, const OrderPlaced& m);

}  // namespace dedupsim
