#include "postgres/inbox_cleanup.h"

#include "core/clock.h"

namespace dedupsim {

CleanupResult DeleteInboxRecordsOlderThan(PgConnection& db, TimePoint now,
                                          std::chrono::milliseconds older_than) {
  CleanupResult result;
  // Timestamps are ISO 8601 UTC text of one width, so text order is time order.
  result.cutoff = FormatTimestamp(now - older_than);
  db.ExecScript("BEGIN");
  result.deleted = db.Exec("DELETE FROM Inbox WHERE ReceivedAt < $1 AND CompletedAt IS NOT NULL",
                           {result.cutoff})
                       .affected();
  PgResult left = db.Exec("SELECT count(*) AS \"InboxRows\", count(CASE WHEN ReceivedAt < $1 "
                          "THEN 1 END) AS \"UnfinishedPastCutoff\" FROM Inbox",
                          {result.cutoff});
  result.kept = left.Int(0, 0);
  result.kept_in_progress = left.Int(0, 1);
  db.ExecScript("COMMIT");
  return result;
}

}  // namespace dedupsim
