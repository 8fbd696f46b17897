#include "consumers/payload_checked.h"

#include "consumers/naive.h"
#include "store/keyed_stores.h"

namespace dedupsim {

std::string_view ToString(PayloadCheck result) {
  switch (result) {
    case PayloadCheck::kProcessed:
      return "Processed";
    case PayloadCheck::kDuplicate:
      return "Duplicate";
    case PayloadCheck::kContentMismatch:
      return "ContentMismatch";
  }
  return "?";
}

PayloadCheckResult PayloadCheckedReserveStock::Handle(const OrderPlaced& m) {
  PayloadCheckResult out;
  out.hash = PayloadHash(m);
  ScopedTransaction tx(store_);
  // After a duplicate key the transaction stays usable, to read the stored row (on
  // PostgreSQL the claim ran under a savepoint: store/keyed_stores.h).
  if (store_.keyed().ClaimCompletedWithHash(m.message_id, kName, out.hash, clock_.Now()) ==
      InsertResult::kDuplicateKey) {
    std::optional<InboxRow> row = store_.Find(InboxKey::kMessageIdAndConsumer, m.message_id, kName);
    tx.Rollback();
    out.stored_hash = row && row->payload_hash ? *row->payload_hash : "";
    // A row written without a hash (by another consumer version) cannot be compared: it
    // is taken as the same message, as the plain inbox would.
    bool same = out.stored_hash.empty() || out.stored_hash == out.hash;
    out.result = same ? PayloadCheck::kDuplicate : PayloadCheck::kContentMismatch;
    return out;
  }
  AddReserved(store_, m);
  store_.RunHook("BeforeCommit", before_commit);
  tx.Commit();
  return out;
}

}  // namespace dedupsim
