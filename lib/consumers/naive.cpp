#include "consumers/naive.h"

#include "sqlite/statement.h"

namespace dedupsim {

void AddReserved(Connection& db, const OrderPlaced& m) {
  db.Cached("UPDATE StockItems SET Reserved = Reserved + ?1 WHERE BookId = ?2")
      .Bind(1, m.quantity)
      .Bind(2, m.book_id)
      .Execute();
}

void NaiveReserveStock::Handle(const OrderPlaced& m) { AddReserved(db_, m); }

}  // namespace dedupsim
