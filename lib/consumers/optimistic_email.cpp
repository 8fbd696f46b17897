#include "consumers/optimistic_email.h"

#include "consumers/check_then_process.h"
#include "schema.h"
#include "sqlite/transaction.h"

namespace dedupsim {

OptimisticEmailReport OptimisticEmailSender::Handle(const OrderPlaced& m) {
  OptimisticEmailReport report;
  if (FindInboxRow(db_, m.message_id, kName)) return report;
  Transaction tx(db_);
  provider_.Send(m.message_id, StockReservedText(m));
  report.sent = true;
  db_.Note("send", "EmailProvider.Send", "sent");
  RunHook(db_, "AfterSend", after_send);
  // The key decides now: the first copy to commit wins, the other rolls back.
  if (InsertCompletedInboxRow(db_, m.message_id, kName, clock_.Now()) ==
      InsertResult::kDuplicateKey) {
    tx.Rollback();
    return report;
  }
  RunHook(db_, "BeforeCommit", before_commit);
  tx.Commit();
  report.outcome = EmailOutcome::kSent;
  report.committed = true;
  return report;
}

}  // namespace dedupsim
