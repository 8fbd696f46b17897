#include "consumers/natural_key.h"

#include "consumers/naive.h"
#include "store/keyed_stores.h"

namespace dedupsim {

bool NaturalKeyReserveStock::Handle(const OrderPlaced& m) {
  ScopedTransaction tx(store_);
  if (store_.keyed().InsertReservation(m.order_id, m.book_id, m.quantity, clock_.Now()) ==
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
