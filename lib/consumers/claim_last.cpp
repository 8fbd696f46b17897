#include "consumers/claim_last.h"

#include "consumers/check_then_process.h"
#include "consumers/naive.h"
#include "sqlite/run_hook.h"
#include "sqlite/schema.h"
#include "sqlite/store.h"
#include "sqlite/transaction.h"

namespace dedupsim {

namespace {

BusyStats Since(const BusyStats& before, const BusyStats& after) {
  return BusyStats{after.calls - before.calls, after.waited - before.waited};
}

}  // namespace

ClaimLastReport ClaimLastReserveStock::HandleOnStore(const OrderPlaced& m) {
  ClaimLastReport report;
  ScopedTransaction tx(*store_);
  AddReserved(*store_, m);
  report.reserved_inside = store_->ReadStock(m.book_id).reserved;
  if (store_->ClaimCompleted(InboxKey::kMessageIdAndConsumer, m.message_id, kName, clock_.Now()) ==
      InsertResult::kDuplicateKey) {
    tx.Rollback();  // the stock update goes with it
    report.rolled_back = !store_->InTransaction();
    return report;
  }
  store_->RunHook("BeforeCommit", before_commit);
  tx.Commit();
  report.processed = true;
  return report;
}

ClaimLastReport ClaimLastReserveStock::Handle(const OrderPlaced& m) {
  if (store_ != nullptr) return HandleOnStore(m);
  // SQLite's own path: the busy handler's waits and Changes() are measured on the
  // connection; the statements are the store's.
  Connection& db = *db_;
  SqliteStore store(db);
  ClaimLastReport report;
  Transaction tx(db);
  BusyStats before = db.busy();
  AddReserved(store, m);
  report.stock_update_changes = db.Changes();
  report.stock_update_wait = Since(before, db.busy());
  report.reserved_inside = ReadStock(db, m.book_id).reserved;

  before = db.busy();
  InsertResult claimed =
      store.ClaimCompleted(InboxKey::kMessageIdAndConsumer, m.message_id, kName, clock_.Now());
  report.claim_wait = Since(before, db.busy());
  if (claimed == InsertResult::kDuplicateKey) {
    tx.Rollback();  // the stock update goes with it
    report.rolled_back = !db.InTransaction();  // SQLite says no transaction is open
    return report;
  }
  RunHook(db, "BeforeCommit", before_commit);
  tx.Commit();
  report.processed = true;
  return report;
}

}  // namespace dedupsim
