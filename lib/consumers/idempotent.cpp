#include "consumers/idempotent.h"

#include "consumers/check_then_process.h"
#include "consumers/naive.h"

namespace dedupsim {

IdempotentReserveStock::HotStatements& IdempotentReserveStock::Statements() {
  sqlite3* owner = db_.handle();  // throws once the connection is closed
  if (hot_.owner != owner || hot_.key != inbox_key) {
    hot_.insert = &db_.Cached(InsertCompletedInboxSql(inbox_key));
    hot_.update = &AddReservedStatement(db_);
    hot_.owner = owner;
    hot_.key = inbox_key;
  }
  return hot_;
}

bool IdempotentReserveStock::Handle(const OrderPlaced& m) {
  HotStatements& s = Statements();
  Transaction tx(db_, begin);
  if (InsertCompletedInboxRow(*s.insert, m.message_id, kName, stamp_.Format(clock_.Now())) ==
      InsertResult::kDuplicateKey) {
    tx.Rollback();
    return false;
  }
  AddReserved(*s.update, m);
  RunHook(db_, "BeforeCommit", before_commit);
  tx.Commit();
  return true;
}

}  // namespace dedupsim
