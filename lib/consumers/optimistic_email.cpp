#include "consumers/optimistic_email.h"

namespace dedupsim {

OptimisticEmailReport OptimisticEmailSender::Handle(const OrderPlaced& m) {
  OptimisticEmailReport report;
  if (db_.Find(InboxKey::kMessageIdAndConsumer, m.message_id, kName)) return report;
  ScopedTransaction tx(db_);
  provider_.Send(m.message_id, StockReservedText(m));
  report.sent = true;
  db_.Note("send", "EmailProvider.Send", "sent");
  db_.RunHook("AfterSend", after_send);
  // The key decides now: the first copy to commit wins, the other rolls back.
  if (db_.ClaimCompleted(InboxKey::kMessageIdAndConsumer, m.message_id, kName, clock_.Now()) ==
      InsertResult::kDuplicateKey) {
    tx.Rollback();
    return report;
  }
  db_.RunHook("BeforeCommit", before_commit);
  tx.Commit();
  report.outcome = EmailOutcome::kSent;
  report.committed = true;
  return report;
}

}  // namespace dedupsim
