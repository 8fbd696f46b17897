// The email consumer under optimistic concurrency, as claim-last handles the stock: no
// claim ahead of the work. It looks for a completed Inbox row (a later duplicate stops
// there), then in one transaction sends the email and inserts the completed row; the key
// decides at commit. Two copies at once both look before either commits, both send, and
// the loser's insert fails on the key and rolls back: the database stays right, but an
// email cannot be rolled back, so two went out.
#pragma once

#include <optional>

#include "consumers/email.h"
#include "core/clock.h"
#include "core/hooks.h"
#include "core/message.h"
#include "store/store.h"

namespace dedupsim {

struct OptimisticEmailReport {
  // kSent: this delivery's row committed. kAlreadySent: a completed row was there when it
  // looked, or its insert lost at commit; what it acks either way.
  EmailOutcome outcome = EmailOutcome::kAlreadySent;
  bool sent = false;       // this delivery called the provider
  bool committed = false;  // its Inbox row committed
};

class OptimisticEmailSender {
 public:
  static constexpr const char* kName = "notifications.stock-reserved-email";

  OptimisticEmailSender(Store& db, EmailProvider& provider, Clock& clock)
      : db_(db), provider_(provider), clock_(clock) {}

  Hook after_send;
  Hook before_commit;

  OptimisticEmailReport Handle(const OrderPlaced& m);

 private:
  Store& db_;
  EmailProvider& provider_;
  Clock& clock_;
};

}  // namespace dedupsim
