#include "consumers/receive_count.h"

#include "consumers/naive.h"
#include "store/keyed_stores.h"

namespace dedupsim {

ReceiveReport ReceiveCountingReserveStock::Handle(const OrderPlaced& m) {
  ReceiveReport report;
  ScopedTransaction tx(store_);
  // Seen before: the receipt is counted and the work skipped, in one commit (the store
  // keeps the transaction usable after the duplicate key: store/keyed_stores.h).
  if (store_.keyed().ClaimOrCountReceipt(m.message_id, kName, clock_.Now()) ==
      InsertResult::kInserted) {
    AddReserved(store_, m);
    store_.RunHook("BeforeCommit", before_commit);
    report.processed = true;
  }
  if (auto row = store_.Find(InboxKey::kMessageIdAndConsumer, m.message_id, kName)) {
    report.receive_count = row->receive_count;
  }
  tx.Commit();
  return report;
}

}  // namespace dedupsim
