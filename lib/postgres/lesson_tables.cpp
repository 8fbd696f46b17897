#include "postgres/lesson_tables.h"

#include "postgres/store.h"

namespace dedupsim {

void PgLessonTables::AddOutboxMessage(const OrderPlaced& source, const OrderPlaced& out,
                                      TimePoint now) {
  db_.Exec(
      "INSERT INTO Outbox (MessageId, SourceMessageId, Type, OrderId, BookId, Quantity, "
      "CreatedAt, DispatchedAt) VALUES ($1, $2, 'StockReserved', $3, $4, $5, $6, NULL)",
      {out.message_id, source.message_id, out.order_id, out.book_id, std::to_string(out.quantity),
       FormatTimestamp(now)},
      "Outbox");
}

std::vector<OrderPlaced> PgLessonTables::PendingOutboxMessages() {
  PgResult r = db_.Exec(
      "SELECT MessageId, OrderId, BookId, Quantity FROM Outbox WHERE DispatchedAt IS NULL "
      "ORDER BY CreatedAt, MessageId");
  std::vector<OrderPlaced> pending;
  for (int row = 0; row < r.rows(); ++row) {
    pending.push_back(OrderPlaced{r.Text(row, 0), r.Text(row, 1), r.Text(row, 2), r.Int(row, 3)});
  }
  return pending;
}

void PgLessonTables::MarkDispatched(std::string_view message_id, TimePoint now) {
  db_.Exec("UPDATE Outbox SET DispatchedAt = $1 WHERE MessageId = $2",
           {FormatTimestamp(now), std::string(message_id)}, "Outbox");
}

int64_t PgLessonTables::CountOutboxRows(bool dispatched_only) {
  return db_
      .Exec(dispatched_only ? "SELECT count(*) FROM Outbox WHERE DispatchedAt IS NOT NULL"
                            : "SELECT count(*) FROM Outbox")
      .Int(0, 0);
}

void PgLessonTables::AddShipmentRequest(std::string_view order_id, TimePoint now) {
  db_.Exec("INSERT INTO ShipmentRequests (OrderId, RequestedAt) VALUES ($1, $2)",
           {std::string(order_id), FormatTimestamp(now)}, "ShipmentRequests");
}

int64_t PgLessonTables::CountShipmentRequests(std::string_view order_id) {
  return db_
      .Exec("SELECT count(*) FROM ShipmentRequests WHERE OrderId = $1", {std::string(order_id)})
      .Int(0, 0);
}

void PgLessonTables::AddAuditEntry(std::string_view order_id, std::string_view entry,
                                   TimePoint now) {
  db_.Exec("INSERT INTO AuditLog (OrderId, Entry, At) VALUES ($1, $2, $3)",
           {std::string(order_id), std::string(entry), FormatTimestamp(now)}, "AuditLog");
}

int64_t PgLessonTables::CountAuditEntries(std::string_view order_id) {
  return db_.Exec("SELECT count(*) FROM AuditLog WHERE OrderId = $1", {std::string(order_id)})
      .Int(0, 0);
}

CleanupResult PgLessonTables::DeleteInboxRecordsOlderThan(TimePoint now,
                                                          std::chrono::milliseconds older_than) {
  CleanupResult result;
  // Timestamps are ISO 8601 UTC text of one width, so text order is time order.
  result.cutoff = FormatTimestamp(now - older_than);
  db_.Exec("BEGIN");
  try {
    result.deleted = db_.Exec("DELETE FROM Inbox WHERE ReceivedAt < $1 AND CompletedAt IS NOT NULL",
                              {result.cutoff}, "Inbox")
                         .affected();
    PgResult left = db_.Exec(
        "SELECT count(*) AS \"InboxRows\", count(CASE WHEN ReceivedAt < $1 THEN 1 END) AS "
        "\"UnfinishedPastCutoff\" FROM Inbox",
        {result.cutoff});
    result.kept = left.Int(0, 0);
    result.kept_in_progress = left.Int(0, 1);
    db_.Exec("COMMIT");
  } catch (...) {
    if (db_.is_open() && db_.InTransaction()) db_.Exec("ROLLBACK");
    throw;
  }
  return result;
}

LessonTables& PgStore::tables() {
  if (!tables_) tables_ = std::make_shared<PgLessonTables>(db_);
  return *tables_;
}

}  // namespace dedupsim
