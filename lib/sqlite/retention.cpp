#include "sqlite/retention.h"

#include "sqlite/schema.h"
#include "sqlite/statement.h"
#include "sqlite/transaction.h"

namespace dedupsim {

CleanupResult DeleteInboxRecordsOlderThan(Connection& db, TimePoint now,
                                          std::chrono::milliseconds older_than) {
  CleanupResult result;
  // Timestamps are ISO 8601 UTC text of one width, so text order is time order.
  result.cutoff = FormatTimestamp(now - older_than);
  Transaction tx(db, TransactionKind::kImmediate);
  db.Prepare("DELETE FROM Inbox WHERE ReceivedAt < ?1 AND CompletedAt IS NOT NULL")
      .Bind(1, result.cutoff)
      .Execute();
  result.deleted = db.Changes();
  Statement left = db.Prepare(
      "SELECT count(*) AS \"InboxRows\", count(CASE WHEN ReceivedAt < ?1 THEN 1 END) AS "
      "\"UnfinishedPastCutoff\" FROM Inbox");
  left.Bind(1, result.cutoff);
  left.Step();
  result.kept = left.ColumnInt(0);
  result.kept_in_progress = left.ColumnInt(1);
  left.Reset();
  tx.Commit();
  return result;
}

}  // namespace dedupsim
