// A claim with a lease, for work that cannot join the database transaction (an email) and a
// reservation that can. The claim is an Inbox row "in progress" committed ahead of the work,
// as the email consumer's, but it records its owner and a lease expiry (Owner,
// LeaseExpiresAt). A live owner renews the lease (keep-alive). A delivery that finds the
// claim in progress backs off while the lease runs, and takes the claim over once it has
// expired (a compare-and-set on the owner and expiry it read). The owner completes only if
// it still holds the claim: completing reserves the stock and marks the row in one
// transaction, guarded by Owner, so a claim lost to a takeover cannot reserve twice. The
// email, sent before, is not guarded by anything: an owner that was only slow, not dead,
// sends it again when it resumes.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "consumers/email.h"
#include "core/clock.h"
#include "core/hooks.h"
#include "core/message.h"
#include "store/store.h"

namespace dedupsim {

enum class LeaseOutcome {
  kDone,         // claimed (or took over), sent, reserved, completed
  kAlreadyDone,  // the row was completed before this delivery
  kBackedOff,    // another owner's lease runs: redeliver later
  kLeaseLost,    // sent, but the claim had been taken over: nothing reserved, rolled back
};

std::string_view ToString(LeaseOutcome outcome);  // "Done", "AlreadyDone", ...

struct LeaseReport {
  LeaseOutcome outcome = LeaseOutcome::kBackedOff;
  bool took_over = false;      // the claim was another owner's, expired, and is now ours
  std::string previous_owner;  // whose claim it took over
  bool sent = false;           // this delivery called the provider
};

class LeasedReserveAndNotify {
 public:
  static constexpr const char* kName = "inventory.reserve-and-notify";

  // owner: who this delivery is ("A (pid 123)"); lease: how long a claim or renewal holds.
  LeasedReserveAndNotify(Store& store, EmailProvider& provider, Clock& clock, std::string owner,
                         std::chrono::milliseconds lease)
      : store_(store),
        provider_(provider),
        clock_(clock),
        owner_(std::move(owner)),
        lease_(lease) {}

  Hook before_send;

  LeaseReport Handle(const OrderPlaced& m);
  // Keep-alive: extends the lease from now, if this owner still holds the claim.
  bool Renew(const OrderPlaced& m);

 private:
  Store& store_;
  EmailProvider& provider_;
  Clock& clock_;
  std::string owner_;
  std::chrono::milliseconds lease_;
};

}  // namespace dedupsim
