#include "consumers/claim_last.h"

#include "consumers/check_then_process.h"
#include "consumers/naive.h"
#include "schema.h"
#include "sqlite/transaction.h"

namespace dedupsim {

namespace {

BusyStats Since(const BusyStats& before, const BusyStats& after) {
  return BusyStats{after.calls - before.calls, after.waited - before.waited};
}

}  // namespace

ClaimLastReport ClaimLastReserveStock::Handle(const OrderPlaced& m) {
  ClaimLastReport report;
  Transaction tx(db_);
  BusyStats before = db_.busy();
  AddReserved(db_, m);
  report.stock_update_changes = db_.Changes();
  report.stock_update_wait = Since(before, db_.busy());
  report.reserved_inside = ReadStock(db_, m.book_id).reserved;

  before = db_.busy();
  InsertResult claimed = InsertCompletedInboxRow(db_, m.message_id, kName, clock_.Now());
  report.claim_wait = Since(before, db_.busy());
  if (claimed == InsertResult::kDuplicateKey) {
    tx.Rollback();  // the stock update goes with it
    report.rolled_back = !db_.InTransaction();  // SQLite says no transaction is open
    return report;
  }
  RunHook(db_, "BeforeCommit", before_commit);
  tx.Commit();
  report.processed = true;
  return report;
}

}  // namespace dedupsim
