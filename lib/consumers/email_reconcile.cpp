#include "consumers/email_reconcile.h"

#include "schema.h"
#include "sqlite/statement.h"

namespace dedupsim {

void ReconcilingEmailSender::Complete(const OrderPlaced& m) {
  db_.Cached("UPDATE Inbox SET CompletedAt = ?1 WHERE MessageId = ?2 AND Consumer = ?3")
      .Bind(1, FormatTimestamp(clock_.Now()))
      .Bind(2, m.message_id)
      .Bind(3, kName)
      .Execute();  // phase 2: completed
}

ReconcileOutcome ReconcilingEmailSender::Handle(const OrderPlaced& m) {
  ReconcileOutcome out;
  if (auto entry = FindInboxRow(db_, m.message_id, kName)) {
    if (entry->completed_at) {
      out.outcome = EmailOutcome::kAlreadySent;
      return out;
    }
    // In progress: settle it with the provider, which knows what it sent under this key.
    out.reconciled = true;
    out.provider_knew = provider_.Find(m.message_id).has_value();
    db_.Note("reconcile", "EmailProvider.Find", out.provider_knew ? "sent before" : "never sent");
    if (out.provider_knew) {
      out.outcome = EmailOutcome::kAlreadySent;
    } else {
      ProviderSend sent = provider_.SendWithKey(m.message_id, StockReservedText(m));
      out.outcome = sent == ProviderSend::kSent ? EmailOutcome::kSent : EmailOutcome::kAlreadySent;
      db_.Note("send", "EmailProvider.Send (same key)", std::string(ToString(out.outcome)));
    }
    Complete(m);
    return out;
  }
  InsertResult claimed =
      db_.Cached("INSERT INTO Inbox (MessageId, Consumer, ReceivedAt, CompletedAt) "
                 "VALUES (?1, ?2, ?3, NULL)")
          .Bind(1, m.message_id)
          .Bind(2, kName)
          .Bind(3, FormatTimestamp(clock_.Now()))
          .ExecuteInsert();  // phase 1: in progress, committed
  if (claimed == InsertResult::kDuplicateKey) {
    // Another instance claimed it a moment ago and is sending now: leave it to that one.
    out.outcome = EmailOutcome::kNeedsReconciliation;
    return out;
  }
  RunHook(db_, "BeforeSend", before_send);
  ProviderSend sent = provider_.SendWithKey(m.message_id, StockReservedText(m));
  out.outcome = sent == ProviderSend::kSent ? EmailOutcome::kSent : EmailOutcome::kAlreadySent;
  db_.Note("send", "EmailProvider.Send", std::string(ToString(out.outcome)));
  RunHook(db_, "AfterSend", after_send);
  Complete(m);
  return out;
}

}  // namespace dedupsim
