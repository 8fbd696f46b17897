#include "consumers/receive_count.h"

#include "consumers/check_then_process.h"
#include "consumers/naive.h"
#include "schema.h"
#include "sqlite/statement.h"
#include "sqlite/transaction.h"

namespace dedupsim {

ReceiveReport ReceiveCountingReserveStock::Handle(const OrderPlaced& m) {
  ReceiveReport report;
  Transaction tx(db_);
  const TimePoint now = clock_.Now();
  if (InsertCompletedInboxRow(db_, m.message_id, kName, now) == InsertResult::kDuplicateKey) {
    // Seen before: count this receipt and skip the work, in one commit. The failed INSERT
    // undid only itself; the transaction is still open.
    db_.Cached(
           "UPDATE Inbox SET ReceiveCount = ReceiveCount + 1, LastReceivedAt = ?1 "
           "WHERE MessageId = ?2 AND Consumer = ?3")
        .Bind(1, FormatTimestamp(now))
        .Bind(2, m.message_id)
        .Bind(3, kName)
        .Execute();
  } else {
    AddReserved(db_, m);
    RunHook(db_, "BeforeCommit", before_commit);
    report.processed = true;
  }
  if (auto row = FindInboxRow(db_, m.message_id, kName)) report.receive_count = row->receive_count;
  tx.Commit();
  return report;
}

}  // namespace dedupsim
