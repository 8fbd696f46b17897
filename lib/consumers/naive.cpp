#include "consumers/naive.h"

namespace dedupsim {

void AddReserved(StockStore& store, const OrderPlaced& m) {
  store.AddReserved(m.book_id, m.quantity);
}

void NaiveReserveStock::Handle(const OrderPlaced& m) { AddReserved(store_, m); }

}  // namespace dedupsim
