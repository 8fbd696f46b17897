#include "consumers/natural_key.h"

#include "consumers/naive.h"
#include "sqlite/statement.h"

namespace dedupsim {

bool NaturalKeyReserveStock::Handle(const OrderPlaced& m) {
  Transaction tx(db_, begin);
  InsertResult reserved =
      db_.Cached("INSERT INTO StockReservations (OrderId, BookId, Quantity) VALUES (?1, ?2, ?3)")
          .Bind(1, m.order_id)
          .Bind(2, m.book_id)
          .Bind(3, m.quantity)
          .ExecuteInsert();
  if (reserved == InsertResult::kDuplicateKey) {
    tx.Rollback();
    return false;
  }
  AddReserved(db_, m);
  RunHook(db_, "BeforeCommit", before_commit);
  tx.Commit();
  return true;
}

}  // namespace dedupsim
