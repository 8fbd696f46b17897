#include "explore/record_first.h"

#include "consumers/check_then_process.h"
#include "consumers/naive.h"
#include "sqlite/transaction.h"

namespace dedupsim::explore {

bool ClaimLastReserveStock::Handle(const OrderPlaced& m) {
  Transaction tx(db_);
  AddReserved(db_, m);
  if (InsertCompletedInboxRow(db_, m.message_id, kName, clock_.Now()) ==
      InsertResult::kDuplicateKey) {
    tx.Rollback();  // takes the stock update back with it
    return false;
  }
  RunHook(db_, "BeforeCommit", before_commit);
  tx.Commit();
  return true;
}

}  // namespace dedupsim::explore
