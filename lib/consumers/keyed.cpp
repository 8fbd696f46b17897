#include "consumers/keyed.h"

namespace dedupsim {

const char* TypeName(OrderEventType type) {
  return type == OrderEventType::kPlaced ? "OrderPlaced" : "OrderCancelled";
}

bool KeyedReserveStock::Handle(const OrderEvent& event, const std::string& key) {
  ScopedTransaction tx(store_);
  if (store_.ClaimCompleted(InboxKey::kMessageIdAndConsumer, key, kName, clock_.Now()) ==
      InsertResult::kDuplicateKey) {
    tx.Rollback();
    return false;
  }
  const int64_t change =
      event.type == OrderEventType::kPlaced ? event.body.quantity : -event.body.quantity;
  store_.AddReserved(event.body.book_id, change);
  tx.Commit();
  return true;
}

}  // namespace dedupsim
