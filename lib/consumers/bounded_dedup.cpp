#include "consumers/bounded_dedup.h"

#include "consumers/naive.h"

namespace dedupsim {

bool BoundedStoreReserveStock::Handle(const OrderPlaced& m) {
  BoundedKeyStore::AddResult added = store_.Add(m.message_id);
  if (!added.added) {
    db_.Note("store", "add " + m.message_id, "already there: skip");
    return false;
  }
  db_.Note("store", "add " + m.message_id,
           added.evicted ? "added, evicted " + *added.evicted : "added");
  AddReserved(db_, m);
  return true;
}

}  // namespace dedupsim
