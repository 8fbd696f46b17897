#include "consumers/naive.h"

#include "sqlite/statement.h"

namespace dedupsim {

Statement& AddReservedStatement(Connection& db) {
  return db.Cached("UPDATE StockItems SET Reserved = Reserved + ?1 WHERE BookId = ?2");
}

void AddReserved(Statement& update, const OrderPlaced& m) {
  update.Reset();  // free when the last execution ended normally
  update.Bind(1, m.quantity)
      .BindUntilReset(2, m.book_id)  // m outlives the execution
      .Execute();
}

void AddReserved(Connection& db, const OrderPlaced& m) { AddReserved(AddReservedStatement(db), m); }

void NaiveReserveStock::Handle(const OrderPlaced& m) { AddReserved(db_, m); }

}  // namespace dedupsim
