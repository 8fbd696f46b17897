#include "consumers/idempotent.h"

#include "consumers/check_then_process.h"
#include "consumers/naive.h"

namespace dedupsim {

bool IdempotentReserveStock::Handle(const OrderPlaced& m) {
  Transaction tx(db_, begin);
  if (InsertCompletedInboxRow(db_, m.message_id, kName, clock_.Now(), inbox_key) ==
      InsertResult::kDuplicateKey) {
    tx.Rollback();
    return false;
  }
  AddReserved(db_, m);
  RunHook(db_, "BeforeCommit", before_commit);
  tx.Commit();
  return true;
}

}  // namespace dedupsim
