#include "consumers/absolute_write.h"

#include "sqlite/statement.h"

namespace dedupsim {

void AbsoluteReserveStock::Handle(const OrderPlaced& m) {
  db_.Cached(
         "INSERT INTO StockReservations (OrderId, BookId, Quantity, ReservedAt) "
         "VALUES (?1, ?2, ?3, ?4) ON CONFLICT (OrderId, BookId) DO UPDATE SET "
         "Quantity = excluded.Quantity")
      .Bind(1, m.order_id)
      .Bind(2, m.book_id)
      .Bind(3, m.quantity)
      .Bind(4, FormatTimestamp(clock_.Now()))
      .Execute();
}

void SetBookReserved::Handle(const OrderPlaced& m) {
  db_.Cached("UPDATE StockItems SET Reserved = ?1 WHERE BookId = ?2")
      .Bind(1, m.quantity)
      .Bind(2, m.book_id)
      .Execute();
}

int64_t ReservedByRows(Connection& db, std::string_view book_id) {
  Statement query =
      db.Prepare("SELECT coalesce(sum(Quantity), 0) FROM StockReservations WHERE BookId = ?1");
  query.Bind(1, book_id);
  query.Step();
  return query.ColumnInt(0);
}

}  // namespace dedupsim
