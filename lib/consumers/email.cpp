#include "consumers/email.h"

#include <fmt/format.h>


namespace dedupsim {

std::string_view ToString(EmailOutcome outcome) {
  switch (outcome) {
    case EmailOutcome::kSent:
      return "Sent";
    case EmailOutcome::kAlreadySent:
      return "AlreadySent";
    case EmailOutcome::kNeedsReconciliation:
      return "NeedsReconciliation";
  }
  return "?";
}

void InMemoryEmailProvider::Send(const std::string& idempotency_key, const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  sent_.push_back(idempotency_key + ": " + text);
}

std::vector<std::string> InMemoryEmailProvider::sent() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sent_;
}

int64_t InMemoryEmailProvider::sent_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(sent_.size());
}

std::string StockReservedText(const OrderPlaced& m) {
  return fmt::format("Order {}: {} book(s) reserved", m.order_id, m.quantity);
}

EmailOutcome SendStockReservedEmail::Handle(const OrderPlaced& m) {
  if (auto entry = store_.Find(inbox_key, m.message_id, kName)) {
    // A row still in progress: an earlier attempt may have sent, may not have, or may be
    // sending right now.
    return entry->completed_at ? EmailOutcome::kAlreadySent : EmailOutcome::kNeedsReconciliation;
  }
  InsertResult claimed =
      store_.ClaimInProgress(inbox_key, m.message_id, kName, clock_.Now());  // phase 1
  // Another instance claimed it between our look and our insert: it is sending now.
  if (claimed == InsertResult::kDuplicateKey) return EmailOutcome::kNeedsReconciliation;

  provider_.Send(m.message_id, StockReservedText(m));
  store_.Note("send", "EmailProvider.Send", "sent");
  store_.RunHook("AfterSend", after_send);

  store_.Complete(inbox_key, m.message_id, kName, clock_.Now());  // phase 2
  return EmailOutcome::kSent;
}

}  // namespace dedupsim
