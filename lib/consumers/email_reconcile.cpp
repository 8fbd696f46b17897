#include "consumers/email_reconcile.h"

namespace dedupsim {

ReconcileOutcome SettleInProgressEmail(Store& db, IdempotentEmailProvider& provider, Clock& clock,
                                       const OrderPlaced& m) {
  ReconcileOutcome out;
  out.reconciled = true;
  out.provider_knew = provider.Find(m.message_id).has_value();
  db.Note("reconcile", "EmailProvider.Find", out.provider_knew ? "sent before" : "never sent");
  if (out.provider_knew) {
    out.outcome = EmailOutcome::kAlreadySent;
  } else {
    ProviderSend sent = provider.SendWithKey(m.message_id, StockReservedText(m));
    out.outcome = sent == ProviderSend::kSent ? EmailOutcome::kSent : EmailOutcome::kAlreadySent;
    // The provider never had the key: this is the order's first send, as Handle's own.
    db.Note("send", "EmailProvider.Send", std::string(ToString(out.outcome)));
  }
  db.Complete(InboxKey::kMessageIdAndConsumer, m.message_id, ReconcilingEmailSender::kName,
              clock.Now());
  return out;
}

ReconcileOutcome ReconcilingEmailSender::Handle(const OrderPlaced& m) {
  ReconcileOutcome out;
  if (auto entry = db_.Find(InboxKey::kMessageIdAndConsumer, m.message_id, kName)) {
    if (entry->completed_at) {
      out.outcome = EmailOutcome::kAlreadySent;
      return out;
    }
    // In progress: settle it with the provider, which knows what it sent under this key.
    out = SettleInProgressEmail(db_, provider_, clock_, m);
    return out;
  }
  InsertResult claimed =
      db_.ClaimInProgress(InboxKey::kMessageIdAndConsumer, m.message_id, kName, clock_.Now());
  if (claimed == InsertResult::kDuplicateKey) {
    // Another instance claimed it a moment ago and is sending now: leave it to that one.
    out.outcome = EmailOutcome::kNeedsReconciliation;
    return out;
  }
  db_.RunHook("BeforeSend", before_send);
  ProviderSend sent = provider_.SendWithKey(m.message_id, StockReservedText(m));
  out.outcome = sent == ProviderSend::kSent ? EmailOutcome::kSent : EmailOutcome::kAlreadySent;
  db_.Note("send", "EmailProvider.Send", std::string(ToString(out.outcome)));
  db_.RunHook("AfterSend", after_send);
  db_.Complete(InboxKey::kMessageIdAndConsumer, m.message_id, kName, clock_.Now());
  return out;
}

}  // namespace dedupsim
