#include "consumers/check_then_process.h"

#include "consumers/naive.h"
#include "schema.h"
#include "sqlite/statement.h"
#include "timestamp.h"

namespace dedupsim {

std::string_view InsertCompletedInboxSql(InboxKey key) {
  // Built once per process from the table's one name.
  auto sql = [](InboxKey k) {
    return "INSERT INTO " + std::string(InboxTable(k)) +
           " (MessageId, Consumer, ReceivedAt, CompletedAt) VALUES (?1, ?2, ?3, ?4)";
  };
  static const std::string by_message_and_consumer = sql(InboxKey::kMessageIdAndConsumer);
  static const std::string by_message = sql(InboxKey::kMessageIdOnly);
  return key == InboxKey::kMessageIdOnly ? by_message : by_message_and_consumer;
}

InsertResult InsertCompletedInboxRow(Statement& insert, std::string_view message_id,
                                     std::string_view consumer, std::string_view stamp) {
  insert.Reset();  // free when the last execution ended normally
  // Every text outlives the execution: bound without copies.
  return insert.BindUntilReset(1, message_id)
      .BindUntilReset(2, consumer)
      .BindUntilReset(3, stamp)
      .BindUntilReset(4, stamp)
      .ExecuteInsert();
}

InsertResult InsertCompletedInboxRow(Connection& db, std::string_view message_id,
                                     std::string_view consumer, std::string_view stamp,
                                     InboxKey key) {
  return InsertCompletedInboxRow(db.Cached(InsertCompletedInboxSql(key)), message_id, consumer,
                                 stamp);
}

InsertResult InsertCompletedInboxRow(Connection& db, const std::string& message_id,
                                     const std::string& consumer, TimePoint now, InboxKey key) {
  TimestampFormatter stamp;
  return InsertCompletedInboxRow(db, std::string_view(message_id), std::string_view(consumer),
                                 stamp.Format(now), key);
}

bool CheckThenProcessReserveStock::Handle(const OrderPlaced& m) {
  if (FindInboxRow(db_, m.message_id, kName)) return false;
  AddReserved(db_, m);  // autocommit: committed on its own
  RunHook(db_, "AfterStockCommitted", after_stock_committed);
  InsertCompletedInboxRow(db_, m.message_id, kName, clock_.Now());
  return true;
}

}  // namespace dedupsim
