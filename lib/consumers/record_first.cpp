#include "consumers/record_first.h"

#include "consumers/naive.h"

namespace dedupsim {

bool RecordFirstReserveStock::Handle(const OrderPlaced& m) {
  if (store_.Find(InboxKey::kMessageIdAndConsumer, m.message_id, kName)) return false;
  // Autocommit: the record is durable before any work is done.
  if (store_.ClaimCompleted(InboxKey::kMessageIdAndConsumer, m.message_id, kName, clock_.Now()) ==
      InsertResult::kDuplicateKey) {
    return false;
  }
  store_.RunHook("AfterRecordCommitted", after_record_committed);
  AddReserved(store_, m);  // autocommit: a second, separate commit
  return true;
}

}  // namespace dedupsim
