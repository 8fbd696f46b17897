#include "consumers/check_then_process.h"

#include "consumers/naive.h"

namespace dedupsim {

bool CheckThenProcessReserveStock::Handle(const OrderPlaced& m) {
  if (store_.Find(InboxKey::kMessageIdAndConsumer, m.message_id, kName)) return false;
  AddReserved(store_, m);  // autocommit: committed on its own
  store_.RunHook("AfterStockCommitted", after_stock_committed);
  store_.ClaimCompleted(InboxKey::kMessageIdAndConsumer, m.message_id, kName, clock_.Now());
  return true;
}

}  // namespace dedupsim
