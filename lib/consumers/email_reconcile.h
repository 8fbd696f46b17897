// The email consumer of the post, finished: the same two-phase record, and a provider
// that honours an idempotency key (the message id). A redelivery that finds the record
// still in progress no longer stops at NeedsReconciliation: it asks the provider whether
// the key was sent. If it was, the record is completed and the outcome is AlreadySent; if
// not, it sends with the same key (the provider would turn a duplicate away anyway), then
// completes the record: Sent. No email goes out twice, and no record stays half-done.
#pragma once

#include <optional>

#include "consumers/email.h"
#include "core/clock.h"
#include "core/hooks.h"
#include "core/message.h"
#include "store/store.h"
#include "world/email_provider.h"

namespace dedupsim {

struct ReconcileOutcome {
  EmailOutcome outcome = EmailOutcome::kSent;
  bool reconciled = false;     // the record was found in progress and settled
  bool provider_knew = false;  // the provider already had the key when asked
};

// Settles a record found in progress by asking the provider: completes it, sending first
// (with the same key) only if the provider never sent. Used by ReconcilingEmailSender on a
// redelivery, and by an operator settling a parked case (unreconcilable).
ReconcileOutcome SettleInProgressEmail(Store& db, IdempotentEmailProvider& provider, Clock& clock,
                                       const OrderPlaced& m);

class ReconcilingEmailSender {
 public:
  static constexpr const char* kName = "notifications.stock-reserved-email";

  ReconcilingEmailSender(Store& db, IdempotentEmailProvider& provider, Clock& clock)
      : db_(db), provider_(provider), clock_(clock) {}

  Hook before_send;  // phase 1 committed, nothing sent yet
  Hook after_send;   // the provider accepted the email, phase 2 not written

  ReconcileOutcome Handle(const OrderPlaced& m);

 private:
  Store& db_;
  IdempotentEmailProvider& provider_;
  Clock& clock_;
};

}  // namespace dedupsim
