// The consumer of the bounded-store lesson: the dedup key checked and added in a bounded
// in-memory store (BoundedKeyStore) before the stock update. Each look-up and eviction is
// noted on the connection's trace, since the store has no statements of its own.
#pragma once

#include "bounded_store.h"
#include "message.h"
#include "sqlite/connection.h"

namespace dedupsim {

class BoundedStoreReserveStock {
 public:
  BoundedStoreReserveStock(Connection& db, BoundedKeyStore& store) : db_(db), store_(store) {}

  // False when the store still held the key (skipped).
  bool Handle(const OrderPlaced& m);

 private:
  Connection& db_;
  BoundedKeyStore& store_;
};

}  // namespace dedupsim
