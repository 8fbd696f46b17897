#include "consumers/leased_claim.h"

#include "consumers/naive.h"
#include "schema.h"
#include "sqlite/statement.h"
#include "sqlite/transaction.h"

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
  const TimePoint now = clock_.Now();
  const std::string expires = FormatTimestamp(now + lease_);
  if (std::optional<InboxRow> row = FindInboxRow(db_, m.message_id, kName)) {
    if (row->completed_at) {
      report.outcome = LeaseOutcome::kAlreadyDone;
      return report;
    }
    // Timestamps sort as text: the lease runs while now is before its expiry.
    if (row->lease_expires_at && FormatTimestamp(now) < *row->lease_expires_at) {
      db_.Note("lease", "claimed by " + row->owner.value_or("?"), "lease running: back off");
      return report;
    }
    // Expired: take it over, only if nobody changed the claim since we read it.
    Statement& take = db_.Cached(
        "UPDATE Inbox SET Owner = ?1, LeaseExpiresAt = ?2 WHERE MessageId = ?3 AND "
        "Consumer = ?4 AND CompletedAt IS NULL AND Owner IS ?5 AND LeaseExpiresAt IS ?6");
    take.Bind(1, owner_).Bind(2, expires).Bind(3, m.message_id).Bind(4, kName);
    if (row->owner)
      take.Bind(5, *row->owner);
    else
      take.BindNull(5);
    if (row->lease_expires_at)
      take.Bind(6, *row->lease_expires_at);
    else
      take.BindNull(6);
    take.Execute();
    if (db_.Changes() == 0) {
      db_.Note("lease", "claimed by " + row->owner.value_or("?"), "taken by another first");
      return report;  // another delivery took it first
    }
    db_.Note("lease", "claimed by " + row->owner.value_or("?"), "lease expired: taken over");
    report.took_over = true;
    report.previous_owner = row->owner.value_or("");
  } else {
    InsertResult claimed =
        db_.Cached(
               "INSERT INTO Inbox (MessageId, Consumer, ReceivedAt, CompletedAt, Owner, "
               "LeaseExpiresAt) VALUES (?1, ?2, ?3, NULL, ?4, ?5)")
            .Bind(1, m.message_id)
            .Bind(2, kName)
            .Bind(3, FormatTimestamp(now))
            .Bind(4, owner_)
            .Bind(5, expires)
            .ExecuteInsert();
    if (claimed == InsertResult::kDuplicateKey) return report;
  }
  RunHook(db_, "BeforeSend", before_send);
  provider_.Send(m.message_id, StockReservedText(m));
  report.sent = true;
  db_.Note("send", "EmailProvider.Send", "sent");

  // Complete only while the claim is still ours: the Owner guard fences the database work.
  Transaction tx(db_);
  db_.Cached(
         "UPDATE Inbox SET CompletedAt = ?1 WHERE MessageId = ?2 AND Consumer = ?3 AND "
         "Owner = ?4 AND CompletedAt IS NULL")
      .Bind(1, FormatTimestamp(clock_.Now()))
      .Bind(2, m.message_id)
      .Bind(3, kName)
      .Bind(4, owner_)
      .Execute();
  if (db_.Changes() == 0) {
    tx.Rollback();
    db_.Note("lease", "complete as " + owner_, "lease lost: the claim is another's");
    report.outcome = LeaseOutcome::kLeaseLost;
    return report;
  }
  AddReserved(db_, m);
  tx.Commit();
  report.outcome = LeaseOutcome::kDone;
  return report;
}

bool LeasedReserveAndNotify::Renew(const OrderPlaced& m) {
  db_.Cached(
         "UPDATE Inbox SET LeaseExpiresAt = ?1 WHERE MessageId = ?2 AND Consumer = ?3 AND "
         "Owner = ?4 AND CompletedAt IS NULL")
      .Bind(1, FormatTimestamp(clock_.Now() + lease_))
      .Bind(2, m.message_id)
      .Bind(3, kName)
      .Bind(4, owner_)
      .Execute();
  const bool renewed = db_.Changes() == 1;
  db_.Note("lease", "keep-alive by " + owner_, renewed ? "renewed" : "not ours any more");
  return renewed;
}

}  // namespace dedupsim
