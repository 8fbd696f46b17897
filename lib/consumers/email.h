// A side effect that cannot join the database transaction: an email. The consumer keeps a
// two-phase record: an "in progress" Inbox row committed before sending, "completed" after.
// A redelivery that finds the row still in progress cannot know whether the email went
// out, and says so (NeedsReconciliation) instead of sending again.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/hooks.h"
#include "core/message.h"
#include "store/store.h"
#include "world/email_provider.h"

namespace dedupsim {

enum class EmailOutcome { kSent, kAlreadySent, kNeedsReconciliation };

std::string_view ToString(EmailOutcome outcome);  // "Sent", "AlreadySent", ...

// Keeps every email in memory. Safe for concurrent use.
class InMemoryEmailProvider final : public EmailProvider {
 public:
  void Send(const std::string& idempotency_key, const std::string& text) override;
  std::vector<std::string> sent() const;
  int64_t sent_count() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::string> sent_;
};

// The email's text: "Order <id>: <n> book(s) reserved".
std::string StockReservedText(const OrderPlaced& m);

class SendStockReservedEmail {
 public:
  static constexpr const char* kName = "notifications.stock-reserved-email";

  SendStockReservedEmail(Store& store, EmailProvider& provider, Clock& clock)
      : store_(store), provider_(provider), clock_(clock) {}

  Hook after_send;
  // The post's key; the shared-key lesson sets kMessageIdOnly.
  InboxKey inbox_key = InboxKey::kMessageIdAndConsumer;

  EmailOutcome Handle(const OrderPlaced& m);

 private:
  Store& store_;
  EmailProvider& provider_;
  Clock& clock_;
};

}  // namespace dedupsim
