#include "sqlite/lesson_tables.h"

#include "sqlite/retention.h"
#include "sqlite/schema.h"
#include "sqlite/statement.h"
#include "sqlite/store.h"

namespace dedupsim {

void SqliteLessonTables::AddOutboxMessage(const OrderPlaced& source, const OrderPlaced& out,
                                          TimePoint now) {
  db_.Cached(
         "INSERT INTO Outbox (MessageId, SourceMessageId, Type, OrderId, BookId, Quantity, "
         "CreatedAt, DispatchedAt) VALUES (?1, ?2, 'StockReserved', ?3, ?4, ?5, ?6, NULL)")
      .Bind(1, out.message_id)
      .Bind(2, source.message_id)
      .Bind(3, out.order_id)
      .Bind(4, out.book_id)
      .Bind(5, out.quantity)
      .Bind(6, FormatTimestamp(now))
      .Execute();
}

std::vector<OrderPlaced> SqliteLessonTables::PendingOutboxMessages() {
  std::vector<OrderPlaced> pending;
  Statement query = db_.Prepare(
      "SELECT MessageId, OrderId, BookId, Quantity FROM Outbox WHERE DispatchedAt IS NULL "
      "ORDER BY CreatedAt, MessageId");
  while (query.Step()) {
    pending.push_back(OrderPlaced{query.ColumnText(0), query.ColumnText(1), query.ColumnText(2),
                                  query.ColumnInt(3)});
  }
  return pending;
}

void SqliteLessonTables::MarkDispatched(std::string_view message_id, TimePoint now) {
  db_.Cached("UPDATE Outbox SET DispatchedAt = ?1 WHERE MessageId = ?2")
      .Bind(1, FormatTimestamp(now))
      .Bind(2, message_id)
      .Execute();
}

int64_t SqliteLessonTables::CountOutboxRows(bool dispatched_only) {
  Statement query =
      db_.Prepare(dispatched_only ? "SELECT count(*) FROM Outbox WHERE DispatchedAt IS NOT NULL"
                                  : "SELECT count(*) FROM Outbox");
  query.Step();
  return query.ColumnInt(0);
}

void SqliteLessonTables::AddShipmentRequest(std::string_view order_id, TimePoint now) {
  db_.Cached("INSERT INTO ShipmentRequests (OrderId, RequestedAt) VALUES (?1, ?2)")
      .Bind(1, order_id)
      .Bind(2, FormatTimestamp(now))
      .Execute();
}

int64_t SqliteLessonTables::CountShipmentRequests(std::string_view order_id) {
  Statement query = db_.Prepare("SELECT count(*) FROM ShipmentRequests WHERE OrderId = ?1");
  query.Bind(1, order_id);
  query.Step();
  return query.ColumnInt(0);
}

void SqliteLessonTables::AddAuditEntry(std::string_view order_id, std::string_view entry,
                                       TimePoint now) {
  db_.Cached("INSERT INTO AuditLog (OrderId, Entry, At) VALUES (?1, ?2, ?3)")
      .Bind(1, order_id)
      .Bind(2, entry)
      .Bind(3, FormatTimestamp(now))
      .Execute();
}

int64_t SqliteLessonTables::CountAuditEntries(std::string_view order_id) {
  Statement query = db_.Prepare("SELECT count(*) FROM AuditLog WHERE OrderId = ?1");
  query.Bind(1, order_id);
  query.Step();
  return query.ColumnInt(0);
}

CleanupResult SqliteLessonTables::DeleteInboxRecordsOlderThan(
    TimePoint now, std::chrono::milliseconds older_than) {
  return dedupsim::DeleteInboxRecordsOlderThan(db_, now, older_than);
}

int64_t SqliteLessonTables::CountRows(std::string_view table) {
  return dedupsim::CountRows(db_, table);
}

LessonTables& SqliteStore::tables() {
  if (!tables_) tables_ = std::make_shared<SqliteLessonTables>(*db_);
  return *tables_;
}

}  // namespace dedupsim
