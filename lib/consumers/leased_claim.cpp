#include "consumers/leased_claim.h"

#include "consumers/naive.h"
#include "core/timestamp.h"
#include "store/keyed_stores.h"

namespace dedupsim {

std::string_view ToString(LeaseOutcome outcome) {
  switch (outcome) {
    case LeaseOutcome::kDone:
      return "Done";
    case LeaseOutcome::kAlreadyDone:
      return "AlreadyDone";
    case LeaseOutcome::kBackedOff:
      return "BackedOff";
    case LeaseOutcome::kLeaseLost:
      return "LeaseLost";
  }
  return "?";
}

LeaseReport LeasedReserveAndNotify::Handle(const OrderPlaced& m) {
  LeaseReport report;
  LeaseStore& leases = store_.keyed();
  const TimePoint now = clock_.Now();
  const std::string expires = FormatTimestamp(now + lease_);
  if (std::optional<InboxRow> row =
          store_.Find(InboxKey::kMessageIdAndConsumer, m.message_id, kName)) {
    if (row->completed_at) {
      report.outcome = LeaseOutcome::kAlreadyDone;
      return report;
    }
    // Timestamps sort as text: the lease runs while now is before its expiry.
    if (row->lease_expires_at && FormatTimestamp(now) < *row->lease_expires_at) {
      store_.Note("lease", "claimed by " + row->owner.value_or("?"), "lease running: back off");
      return report;
    }
    // Expired: take it over, only if nobody changed the claim since we read it.
    if (!leases.TakeOver(m.message_id, kName, owner_, expires, row->owner, row->lease_expires_at)) {
      store_.Note("lease", "claimed by " + row->owner.value_or("?"), "taken by another first");
      return report;  // another delivery took it first
    }
    store_.Note("lease", "claimed by " + row->owner.value_or("?"), "lease expired: taken over");
    report.took_over = true;
    report.previous_owner = row->owner.value_or("");
  } else if (leases.ClaimLeased(m.message_id, kName, owner_, now, expires) ==
             InsertResult::kDuplicateKey) {
    return report;
  }
  store_.RunHook("BeforeSend", before_send);
  provider_.Send(m.message_id, StockReservedText(m));
  report.sent = true;
  store_.Note("send", "EmailProvider.Send", "sent");

  // Complete only while the claim is still ours: the Owner guard fences the database work.
  ScopedTransaction tx(store_);
  if (!leases.CompleteOwned(m.message_id, kName, owner_, clock_.Now())) {
    tx.Rollback();
    store_.Note("lease", "complete as " + owner_, "lease lost: the claim is another's");
    report.outcome = LeaseOutcome::kLeaseLost;
    return report;
  }
  AddReserved(store_, m);
  tx.Commit();
  report.outcome = LeaseOutcome::kDone;
  return report;
}

bool LeasedReserveAndNotify::Renew(const OrderPlaced& m) {
  const bool renewed =
      store_.keyed().Renew(m.message_id, kName, owner_, FormatTimestamp(clock_.Now() + lease_));
  store_.Note("lease", "keep-alive by " + owner_, renewed ? "renewed" : "not ours any more");
  return renewed;
}

}  // namespace dedupsim
