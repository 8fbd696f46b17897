#include "sqlite/schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "sqlite/error.h"
#include "sqlite/statement.h"
#include "sqlite/transaction.h"

namespace dedupsim {

namespace {

// Every table as the current version has it. IF NOT EXISTS: safe on an older database,
// where UpgradeSchema then adds what the older tables lack.
constexpr const char* kTables = R"sql(
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
      PayloadHash TEXT,  -- NULL: not recorded (version 2)
      ReceiveCount   INTEGER NOT NULL DEFAULT 1,  -- deliveries of this key (version 3)
      LastReceivedAt TEXT,  -- the latest of them; NULL: only the first (version 3)
      Owner          TEXT,  -- who holds the claim, for a leased claim (version 3)
      LeaseExpiresAt TEXT,  -- until when; another may take it over after (version 3)
      PRIMARY KEY (MessageId, Consumer)
    ) WITHOUT ROWID;
    -- The shared-key experiment's inbox: keyed on MessageId alone, so the first consumer
    -- to record a message silences every other consumer of it (version 2).
    CREATE TABLE IF NOT EXISTS InboxByMessageId (
      MessageId   TEXT NOT NULL PRIMARY KEY CHECK (length(MessageId) <= 100),
      Consumer    TEXT NOT NULL CHECK (length(Consumer) <= 100),
      ReceivedAt  TEXT NOT NULL,
      CompletedAt TEXT
    ) WITHOUT ROWID;
    -- One reservation per order line: the business data is its own dedup record (version 2).
    CREATE TABLE IF NOT EXISTS StockReservations (
      OrderId    TEXT    NOT NULL,
      BookId     TEXT    NOT NULL,
      Quantity   INTEGER NOT NULL,
      ReservedAt TEXT    NOT NULL,
      PRIMARY KEY (OrderId, BookId)
    ) WITHOUT ROWID;
    -- The transactional outbox: outgoing messages written in the consumer's transaction,
    -- sent by a dispatcher, which marks them dispatched (version 3).
    CREATE TABLE IF NOT EXISTS Outbox (
      MessageId       TEXT NOT NULL PRIMARY KEY,
      SourceMessageId TEXT NOT NULL,
      Type            TEXT NOT NULL,
      OrderId         TEXT NOT NULL,
      BookId          TEXT NOT NULL,
      Quantity        INTEGER NOT NULL,
      CreatedAt       TEXT NOT NULL,
      DispatchedAt    TEXT  -- NULL: not yet marked dispatched
    ) WITHOUT ROWID;
    -- What the second-connection handler writes through its second connection (version 3).
    CREATE TABLE IF NOT EXISTS AuditLog (
      Id      INTEGER PRIMARY KEY,
      OrderId TEXT NOT NULL,
      Entry   TEXT NOT NULL,
      At      TEXT NOT NULL
    );
    -- The downstream consumer's work: one request per StockReserved it processed (version 3).
    CREATE TABLE IF NOT EXISTS ShipmentRequests (
      Id          INTEGER PRIMARY KEY,
      OrderId     TEXT NOT NULL,
      RequestedAt TEXT NOT NULL
    );
)sql";

bool HasColumn(Connection& connection, std::string_view table, std::string_view column) {
  Statement query = connection.Prepare("SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2");
  query.Bind(1, table).Bind(2, column);
  query.Step();
  return query.ColumnInt(0) > 0;
}

bool HasTable(Connection& connection, std::string_view table) {
  Statement query =
      connection.Prepare("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1");
  query.Bind(1, table);
  query.Step();
  return query.ColumnInt(0) > 0;
}

// One line per fact the behaviour of table depends on, sorted.
std::vector<std::string> TableFacts(Connection& connection, const std::string& table) {
  std::vector<std::string> facts;
  auto collect = [&](const std::string& sql, const char* what, int columns) {
    Statement query = connection.Prepare(sql);
    query.Bind(1, table);
    while (query.Step()) {
      std::string fact = what;
      for (int i = 0; i < columns; ++i) {
        fact += ' ';
        fact += query.ColumnIsNull(i) ? std::string("NULL") : query.ColumnText(i);
      }
      facts.push_back(fact);
    }
  };
  collect("SELECT type, wr, strict FROM pragma_table_list WHERE name = ?1 AND schema = 'main'",
          "table", 3);
  collect("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?1)", "column", 5);
  collect(
      "SELECT il.\"unique\", il.origin, il.partial, (SELECT group_concat(ii.name, ',') FROM "
      "pragma_index_info(il.name) ii) FROM pragma_index_list(?1) il",
      "index", 4);
  collect("SELECT name FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = ?1", "trigger", 1);
  std::sort(facts.begin(), facts.end());
  return facts;
}

constexpr const char* kTableNames[] = {"StockItems",        "Inbox",    "InboxByMessageId",
                                       "StockReservations", "Outbox",   "AuditLog",
                                       "ShipmentRequests"};

}  // namespace

std::optional<std::string> SchemaDifference(Connection& connection) {
  ConnectionOptions options;
  options.in_memory = true;
  Connection fresh("", options);
  CreateSchema(fresh);
  for (const char* table : kTableNames) {
    std::vector<std::string> want = TableFacts(fresh, table);
    std::vector<std::string> got = TableFacts(connection, table);
    if (got == want) continue;
    for (const std::string& fact : got) {
      if (std::find(want.begin(), want.end(), fact) == want.end()) {
        return fmt::format("table {} is not as dedupsim made it (has {}); not using it", table,
                           fact);
      }
    }
    for (const std::string& fact : want) {
      if (std::find(got.begin(), got.end(), fact) == got.end()) {
        return fmt::format("table {} is not as dedupsim made it (lacks {}); not using it", table,
                           fact);
      }
    }
  }
  return std::nullopt;
}

int SchemaVersion(Connection& connection) {
  Statement query = connection.Prepare("PRAGMA user_version");
  query.Step();
  return static_cast<int>(query.ColumnInt(0));
}

void UpgradeSchema(Connection& connection) {
  int version = SchemaVersion(connection);
  if (version > kSchemaVersion) {
    throw DatabaseError(fmt::format(
        "schema version {} was made by a newer dedupsim (this one knows up to {})", version,
        kSchemaVersion));
  }
  if (version == kSchemaVersion) return;
  Transaction tx(connection, TransactionKind::kImmediate);
  // Version 1 to 2: the Inbox learns the payload hash. Checked by column, so an upgrade
  // that was interrupted after this step cannot fail on a second run.
  if (HasTable(connection, "Inbox") && !HasColumn(connection, "Inbox", "PayloadHash")) {
    connection.ExecScript("ALTER TABLE Inbox ADD COLUMN PayloadHash TEXT");
  }
  // Version 2 to 3: receive counts and leases. Existing rows were received once.
  if (HasTable(connection, "Inbox") && !HasColumn(connection, "Inbox", "ReceiveCount")) {
    connection.ExecScript(
        "ALTER TABLE Inbox ADD COLUMN ReceiveCount INTEGER NOT NULL DEFAULT 1;"
        "ALTER TABLE Inbox ADD COLUMN LastReceivedAt TEXT;"
        "ALTER TABLE Inbox ADD COLUMN Owner TEXT;"
        "ALTER TABLE Inbox ADD COLUMN LeaseExpiresAt TEXT;");
  }
  connection.ExecScript(kTables);
  connection.ExecScript(fmt::format("PRAGMA user_version={}", kSchemaVersion));
  tx.Commit();
}

void CreateSchema(Connection& connection) { UpgradeSchema(connection); }

std::vector<std::string> ResetInventory(Connection& connection, const StockItem& item) {
  // Cached: a run's kept set-up connection (DatabaseFile::WithSetUpConnection) restocks
  // before every lesson and prepares these once. Only the tables that hold rows are
  // cleared: clearing an empty table still rewrites its root page, a frame in the log for
  // nothing (which the lesson's connections would read past, and a crash lesson's recovery
  // note would count).
  static const auto statements = [] {
    std::pair<std::string, std::vector<std::string>> texts;
    for (const char* table : kTableNames) {
      texts.first +=
          fmt::format("{}EXISTS (SELECT 1 FROM {})", texts.first.empty() ? "SELECT " : ", ", table);
      texts.second.push_back(fmt::format("DELETE FROM {}", table));
    }
    return texts;
  }();
  Transaction tx(connection, TransactionKind::kImmediate);
  Statement& holding = connection.Cached(statements.first);
  holding.Step();
  std::array<bool, std::size(kTableNames)> has_rows{};
  for (size_t i = 0; i < has_rows.size(); ++i) {
    has_rows[i] = holding.ColumnInt(static_cast<int>(i)) != 0;
  }
  holding.Reset();
  std::vector<std::string> emptied;
  for (size_t i = 0; i < has_rows.size(); ++i) {
    if (!has_rows[i]) continue;
    connection.Cached(statements.second[i]).Execute();
    emptied.emplace_back(kTableNames[i]);
  }
  connection
      .Cached("INSERT INTO StockItems (BookId, Title, OnHand, Reserved) VALUES (?1, ?2, ?3, ?4)")
      .Bind(1, item.book_id)
      .Bind(2, item.title)
      .Bind(3, item.on_hand)
      .Bind(4, item.reserved)
      .Execute();
  tx.Commit();
  return emptied;
}

StockItem ReadStock(Connection& connection, std::string_view book_id) {
  // Cached: a run's kept set-up connection reads the stock after every lesson.
  Statement& query =
      connection.Cached("SELECT BookId, Title, OnHand, Reserved FROM StockItems WHERE BookId = ?1");
  query.Bind(1, book_id);
  if (!query.Step()) {
    query.Reset();
    throw DatabaseError("no stock item " + std::string(book_id));
  }
  StockItem item{query.ColumnText(0), query.ColumnText(1), query.ColumnInt(2),
                 query.ColumnInt(3)};
  query.Reset();  // a statement left mid-read would keep its read transaction open
  return item;
}

std::optional<InboxRow> FindInboxRow(Connection& connection, std::string_view message_id,
                                     std::string_view consumer) {
  Statement& query = connection.Cached(
      "SELECT MessageId, Consumer, ReceivedAt, CompletedAt, PayloadHash, ReceiveCount, Owner, "
      "LeaseExpiresAt FROM Inbox WHERE MessageId = ?1 AND Consumer = ?2");
  query.Bind(1, message_id).Bind(2, consumer);
  std::optional<InboxRow> row;
  if (query.Step()) {
    row.emplace();
    row->message_id = query.ColumnText(0);
    row->consumer = query.ColumnText(1);
    row->received_at = query.ColumnText(2);
    if (!query.ColumnIsNull(3)) row->completed_at = query.ColumnText(3);
    if (!query.ColumnIsNull(4)) row->payload_hash = query.ColumnText(4);
    row->receive_count = query.ColumnInt(5);
    if (!query.ColumnIsNull(6)) row->owner = query.ColumnText(6);
    if (!query.ColumnIsNull(7)) row->lease_expires_at = query.ColumnText(7);
  }
  query.Reset();  // a statement left mid-read would keep its read transaction open
  return row;
}

std::optional<InboxRow> FindInboxRow(Connection& connection, InboxKey key,
                                     std::string_view message_id, std::string_view consumer) {
  if (key == InboxKey::kMessageIdAndConsumer) return FindInboxRow(connection, message_id, consumer);
  Statement& query = connection.Cached(
      "SELECT MessageId, Consumer, ReceivedAt, CompletedAt FROM InboxByMessageId "
      "WHERE MessageId = ?1");
  query.Bind(1, message_id);
  std::optional<InboxRow> row;
  if (query.Step()) {
    row.emplace();
    row->message_id = query.ColumnText(0);
    row->consumer = query.ColumnText(1);
    row->received_at = query.ColumnText(2);
    if (!query.ColumnIsNull(3)) row->completed_at = query.ColumnText(3);
  }
  query.Reset();
  return row;
}

int64_t CountInboxRows(Connection& connection) { return CountRows(connection, "Inbox"); }

int64_t CountRows(Connection& connection, std::string_view table) {
  Statement& query = connection.Cached(fmt::format("SELECT count(*) FROM {}", table));
  query.Step();
  const int64_t rows = query.ColumnInt(0);
  query.Reset();
  return rows;
}

}  // namespace dedupsim
