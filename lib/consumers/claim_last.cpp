#include "consumers/claim_last.h"

#include "consumers/naive.h"
#include "store/lesson_tables.h"

namespace dedupsim {

ClaimLastReport ClaimLastReserveStock::Handle(const OrderPlaced& m) {
  ClaimLastReport report;
  LockWaits* waits = store_.lock_waits();  // null: the store does not measure its waits
  std::optional<BusyStats> before;
  ScopedTransaction tx(store_);
  if (waits != nullptr) before = waits->busy();
  AddReserved(store_, m);
  report.stock_update_changes = store_.tables().LastChanges();
  if (waits != nullptr) report.stock_update_wait = Since(*before, waits->busy());
  report.reserved_inside = store_.ReadStock(m.book_id).reserved;

  if (waits != nullptr) before = waits->busy();
  const InsertResult claimed =
      store_.ClaimCompleted(InboxKey::kMessageIdAndConsumer, m.message_id, kName, clock_.Now());
  if (waits != nullptr) report.claim_wait = Since(*before, waits->busy());
  if (claimed == InsertResult::kDuplicateKey) {
    tx.Rollback();  // the stock update goes with it
    report.rolled_back = !store_.InTransaction();  // the database says no transaction is open
    return report;
  }
  store_.RunHook("BeforeCommit", before_commit);
  tx.Commit();
  report.processed = true;
  return report;
}

}  // namespace dedupsim
