#include "consumers/keyed.h"

#include "consumers/check_then_process.h"
#include "schema.h"
#include "sqlite/statement.h"
#include "sqlite/transaction.h"

namespace dedupsim {

const char* TypeName(OrderEventType type) {
  return type == OrderEventType::kPlaced ? "OrderPlaced" : "OrderCancelled";
}

bool KeyedReserveStock::Handle(const OrderEvent& event, const std::string& key) {
  Transaction tx(db_);
  if (InsertCompletedInboxRow(db_, key, kName, clock_.Now()) == InsertResult::kDuplicateKey) {
    tx.Rollback();
    return false;
  }
  const int64_t change =
      event.type == OrderEventType::kPlaced ? event.body.quantity : -event.body.quantity;
  db_.Cached("UPDATE StockItems SET Reserved = Reserved + ?1 WHERE BookId = ?2")
      .Bind(1, change)
      .Bind(2, event.body.book_id)
      .Execute();
  tx.Commit();
  return true;
}

}  // namespace dedupsim
