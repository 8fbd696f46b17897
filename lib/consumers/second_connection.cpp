#include "consumers/second_connection.h"

#include "consumers/naive.h"
#include "store/lesson_tables.h"

namespace dedupsim {

void SecondConnectionReserveStock::WriteAudit(const OrderPlaced& m, TimePoint now) {
  // Autocommit: committed now, whatever the main transaction does.
  second_.tables().AddAuditEntry(m.order_id, "stock reserved", now);
}

bool SecondConnectionReserveStock::Handle(const OrderPlaced& m) {
  if (db_.Find(InboxKey::kMessageIdAndConsumer, m.message_id, kName)) return false;
  const TimePoint now = clock_.Now();
  if (!audit_inside_main) WriteAudit(m, now);
  ScopedTransaction tx(db_);
  if (db_.ClaimCompleted(InboxKey::kMessageIdAndConsumer, m.message_id, kName, now) ==
      InsertResult::kDuplicateKey) {
    tx.Rollback();
    return false;
  }
  AddReserved(db_, m);
  if (audit_inside_main) WriteAudit(m, now);
  db_.RunHook("BeforeCommit", before_commit);
  tx.Commit();
  return true;
}

}  // namespace dedupsim
