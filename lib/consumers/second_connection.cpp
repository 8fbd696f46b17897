#include "consumers/second_connection.h"

#include "consumers/check_then_process.h"
#include "consumers/naive.h"
#include "schema.h"
#include "sqlite/statement.h"
#include "sqlite/transaction.h"

namespace dedupsim {

bool SecondConnectionReserveStock::Handle(const OrderPlaced& m) {
  if (FindInboxRow(db_, m.message_id, kName)) return false;
  const TimePoint now = clock_.Now();
  second_.Cached("INSERT INTO AuditLog (OrderId, Entry, At) VALUES (?1, ?2, ?3)")
      .Bind(1, m.order_id)
      .Bind(2, "stock reserved")
      .Bind(3, FormatTimestamp(now))
      .Execute();  // autocommit: committed now, whatever the main transaction does
  Transaction tx(db_);
  if (InsertCompletedInboxRow(db_, m.message_id, kName, now) == InsertResult::kDuplicateKey) {
    tx.Rollback();
    return false;
  }
  AddReserved(db_, m);
  RunHook(db_, "BeforeCommit", before_commit);
  tx.Commit();
  return true;
}

int64_t CountAuditEntries(Connection& db, const std::string& order_id) {
  Statement query = db.Prepare("SELECT count(*) FROM AuditLog WHERE OrderId = ?1");
  query.Bind(1, order_id);
  query.Step();
  return query.ColumnInt(0);
}

}  // namespace dedupsim
