// The consumer of the bounded-store lesson: the dedup key checked and added in a bounded
// in-memory store (BoundedKeyStore) before the stock update. Each look-up and eviction is
// noted on the connection's trace, since the store has no statements of its own.
#pragma once

#include <optional>

#include "core/message.h"
#include "sqlite/store.h"
#include "store/store.h"
#include "world/bounded_store.h"

namespace dedupsim {

class BoundedStoreReserveStock {
 public:
  // db: the inventory database, on either backend; must outlive the consumer.
  BoundedStoreReserveStock(Store& db, BoundedKeyStore& store) : db_(db), store_(store) {}
  // On SQLite: a store over db, which must outlive the consumer.
  BoundedStoreReserveStock(Connection& db, BoundedKeyStore& store)
      : own_(std::in_place, db), db_(*own_), store_(store) {}

  // False when the store still held the key (skipped).
  bool Handle(const OrderPlaced& m);

 private:
  std::optional<SqliteStore> own_;
  Store& db_;
  BoundedKeyStore& store_;
};

}  // namespace dedupsim
