#include "consumers/check_then_process.h"

#include "consumers/naive.h"

namespace dedupsim {

InsertResult InsertCompletedInboxRow(Connection& db, const std::string& message_id,
                                     const std::string& consumer, TimePoint now, InboxKey key) {
  return SqliteStore(db).ClaimCompleted(key, message_id, consumer, now);
}

bool CheckThenProcessReserveStock::Handle(const OrderPlaced& m) {
  if (store_.Find(InboxKey::kMessageIdAndConsumer, m.message_id, kName)) return false;
  AddReserved(store_, m);  // autocommit: committed on its own
  store_.RunHook("AfterStockCommitted", after_stock_committed);
  store_.ClaimCompleted(InboxKey::kMessageIdAndConsumer, m.message_id, kName, clock_.Now());
  return true;
}

}  // namespace dedupsim
