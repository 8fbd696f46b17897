#include "consumers/check_then_process.h"

#include <fmt/format.h>

#include "consumers/naive.h"
#include "schema.h"
#include "sqlite/statement.h"

namespace dedupsim {

InsertResult InsertCompletedInboxRow(Connection& db, const std::string& message_id,
                                     const std::string& consumer, TimePoint now, InboxKey key) {
  std::string stamp = FormatTimestamp(now);
  return db
      .Cached(fmt::format("INSERT INTO {} (MessageId, Consumer, ReceivedAt, CompletedAt) "
                          "VALUES (?1, ?2, ?3, ?4)",
                          InboxTable(key)))
      .Bind(1, message_id)
      .Bind(2, consumer)
      .Bind(3, stamp)
      .Bind(4, stamp)
      .ExecuteInsert();
}

bool CheckThenProcessReserveStock::Handle(const OrderPlaced& m) {
  if (FindInboxRow(db_, m.message_id, kName)) return false;
  AddReserved(db_, m);  // autocommit: committed on its own
  RunHook(db_, "AfterStockCommitted", after_stock_committed);
  InsertCompletedInboxRow(db_, m.message_id, kName, clock_.Now());
  return true;
}

}  // namespace dedupsim
