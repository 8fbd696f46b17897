#include "consumers/naive.h"

namespace dedupsim {

void AddReserved(StockStore& store, const OrderPlaced& m) {
  store.AddReserved(m.book_id, m.quantity);
}

void AddReserved(Connection& db, const OrderPlaced& m) {
  SqliteStore store(db);
  AddReserved(store, m);
}

void NaiveReserveStock::Handle(const OrderPlaced& m) { AddReserved(store_, m); }

}  // namespace dedupsim
