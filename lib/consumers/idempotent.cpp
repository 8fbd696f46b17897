#include "consumers/idempotent.h"

#include "consumers/naive.h"

namespace dedupsim {

bool IdempotentReserveStock::Handle(const OrderPlaced& m) {
  ScopedTransaction tx(store_, begin);
  if (store_.ClaimCompleted(inbox_key, m.message_id, kName, clock_.Now()) ==
      InsertResult::kDuplicateKey) {
    tx.Rollback();
    return false;
  }
  AddReserved(store_, m);
  store_.RunHook("BeforeCommit", before_commit);
  tx.Commit();
  return true;
}

}  // namespace dedupsim
