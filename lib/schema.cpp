#include "schema.h"

#include "sqlite/error.h"
#include "sqlite/statement.h"
#include "sqlite/transaction.h"

namespace dedupsim {

void CreateSchema(Connection& connection) {
  connection.ExecScript(R"sql(
    CREATE TABLE IF NOT EXISTS StockItems (
      BookId   TEXT    NOT NULL PRIMARY KEY,
      Title    TEXT    NOT NULL,
      OnHand   INTEGER NOT NULL,
      Reserved INTEGER NOT NULL DEFAULT 0
    );
    -- One row per message a consumer has taken on. The key is what makes the database the
    -- arbiter: the same consumer cannot record the same message twice.
    CREATE TABLE IF NOT EXISTS Inbox (
      MessageId   TEXT NOT NULL CHECK (length(MessageId) <= 100),
      Consumer    TEXT NOT NULL CHECK (length(Consumer) <= 100),
      ReceivedAt  TEXT NOT NULL,
      CompletedAt TEXT,  -- NULL: in progress (two-phase record)
      PRIMARY KEY (MessageId, Consumer)
    ) WITHOUT ROWID;
    -- Natural idempotency: one reservation per order and book, kept in the business data.
    CREATE TABLE IF NOT EXISTS StockReservations (
      OrderId  TEXT    NOT NULL,
      BookId   TEXT    NOT NULL,
      Quantity INTEGER NOT NULL,
      PRIMARY KEY (OrderId, BookId)
    ) WITHOUT ROWID;
  )sql");
  connection.ExecScript("PRAGMA user_version=" + std::to_string(kSchemaVersion));
}

void ResetInventory(Connection& connection, const StockItem& item) {
  Transaction tx(connection, TransactionKind::kImmediate);
  connection.Exec("DELETE FROM Inbox");
  connection.Exec("DELETE FROM StockItems");
  connection.Prepare("INSERT INTO StockItems (BookId, Title, OnHand, Reserved) VALUES (?1, ?2, ?3, ?4)")
      .Bind(1, item.book_id)
      .Bind(2, item.title)
      .Bind(3, item.on_hand)
      .Bind(4, item.reserved)
      .Execute();
  tx.Commit();
}

StockItem ReadStock(Connection& connection, std::string_view book_id) {
  Statement query =
      connection.Prepare("SELECT BookId, Title, OnHand, Reserved FROM StockItems WHERE BookId = ?1");
  query.Bind(1, book_id);
  if (!query.Step()) throw DatabaseError("no stock item " + std::string(book_id));
  return StockItem{query.ColumnText(0), query.ColumnText(1), query.ColumnInt(2),
                   query.ColumnInt(3)};
}

std::optional<InboxRow> FindInboxRow(Connection& connection, std::string_view message_id,
                                     std::string_view consumer) {
  Statement& query = connection.Cached(
      "SELECT MessageId, Consumer, ReceivedAt, CompletedAt FROM Inbox "
      "WHERE MessageId = ?1 AND Consumer = ?2");
  query.Bind(1, message_id).Bind(2, consumer);
  std::optional<InboxRow> row;
  if (query.Step()) {
    row = InboxRow{query.ColumnText(0), query.ColumnText(1), query.ColumnText(2), std::nullopt};
    if (!query.ColumnIsNull(3)) row->completed_at = query.ColumnText(3);
  }
  query.Reset();  // a statement left mid-read would keep its read transaction open
  return row;
}

int64_t CountInboxRows(Connection& connection) {
  Statement query = connection.Prepare("SELECT count(*) FROM Inbox");
  query.Step();
  return query.ColumnInt(0);
}

}  // namespace dedupsim
