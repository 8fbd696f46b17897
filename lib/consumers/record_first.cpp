#include "consumers/record_first.h"

#include "consumers/check_then_process.h"
#include "consumers/naive.h"
#include "schema.h"

namespace dedupsim {

bool RecordFirstReserveStock::Handle(const OrderPlaced& m) {
  if (FindInboxRow(db_, m.message_id, kName)) return false;
  // Autocommit: the record is durable before any work is done.
  if (InsertCompletedInboxRow(db_, m.message_id, kName, clock_.Now()) ==
      InsertResult::kDuplicateKey) {
    return false;
  }
  RunHook(db_, "AfterRecordCommitted", after_record_committed);
  AddReserved(db_, m);  // autocommit: a second, separate commit
  return true;
}

}  // namespace dedupsim
