// The consumer of the bounded-store lesson: the dedup key checked and added in a bounded
// in-memory store (BoundedKeyStore) before the stock update. Each look-up and eviction is
// noted on the connection's trace, since the store has no statements of its own.
#pragma once

#include <optional>

#include "core/message.h"
#include "store/store.h"
#include "world/bounded_store.h"

namespace dedupsim {

class BoundedStoreReserveStock {
 public:
  // db: the inventory database, on either backend; must outlive the consumer.
  BoundedStoreReserveStock(Store& db, BoundedKeyStore& store) : db_(db), store_(store) {}

  // False when the store still held the key (skipped).
  bool Handle(const OrderPlaced& m);

 private:
  Store& db_;
  BoundedKeyStore& store_;
};

}  // namespace dedupsim
