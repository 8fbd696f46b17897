#include "sqlite/side_records.h"

#include <stdexcept>

#include "sqlite/statement.h"
#include "sqlite/transaction.h"

namespace dedupsim {

const char* SideStoreTables(SideStoreKind kind) {
  switch (kind) {
    case SideStoreKind::kCache:
      return "CREATE TABLE IF NOT EXISTS CacheKeys (Key TEXT NOT NULL PRIMARY KEY, SetAt TEXT NOT "
             "NULL) WITHOUT ROWID;";
    case SideStoreKind::kEmailProvider:
      return R"sql(
    CREATE TABLE IF NOT EXISTS SentEmails (
      IdempotencyKey TEXT NOT NULL PRIMARY KEY,
      Text           TEXT NOT NULL,
      SentAt         TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS ProviderRequests (
      Id             INTEGER PRIMARY KEY,
      IdempotencyKey TEXT NOT NULL,
      Result         TEXT NOT NULL,
      At             TEXT NOT NULL
    );
)sql";
    case SideStoreKind::kNone:
      break;
  }
  return nullptr;
}

const char* SideStoreReset(SideStoreKind kind) {
  switch (kind) {
    case SideStoreKind::kCache:
      return "DELETE FROM CacheKeys;";
    case SideStoreKind::kEmailProvider:
      return "DELETE FROM SentEmails; DELETE FROM ProviderRequests;";
    case SideStoreKind::kNone:
      break;
  }
  return nullptr;
}

Connection& SqliteConnectionOf(SideRecords& records) {
  auto* sqlite = dynamic_cast<SqliteSideRecords*>(&records);
  if (sqlite == nullptr) throw std::logic_error("internal: a side store not of SQLite's on SQLite");
  return sqlite->connection();
}

void SqliteSideRecords::SetTraceRole(std::string actor, std::string target) {
  connection_->SetTraceRole(std::move(actor), std::move(target));
}

void SqliteSideRecords::SetDelivery(DeliveryRef delivery) {
  connection_->SetDelivery(std::move(delivery));
}

bool SqliteSideRecords::CacheContains(const std::string& key) {
  Statement& query = connection_->Cached("SELECT 1 FROM CacheKeys WHERE Key = ?1");
  query.Bind(1, key);
  bool found = query.Step();
  query.Reset();
  return found;
}

void SqliteSideRecords::CacheSet(const std::string& key, Clock& clock) {
  connection_->Cached("INSERT OR REPLACE INTO CacheKeys (Key, SetAt) VALUES (?1, ?2)")
      .Bind(1, key)
      .Bind(2, FormatTimestamp(clock.Now()))
      .Execute();
}

bool SqliteSideRecords::CacheSetIfAbsent(const std::string& key, Clock& clock) {
  connection_->Cached("INSERT OR IGNORE INTO CacheKeys (Key, SetAt) VALUES (?1, ?2)")
      .Bind(1, key)
      .Bind(2, FormatTimestamp(clock.Now()))
      .Execute();
  return connection_->Changes() == 1;
}

int64_t SqliteSideRecords::CacheCount() {
  Statement query = connection_->Prepare("SELECT count(*) FROM CacheKeys");
  query.Step();
  return query.ColumnInt(0);
}

bool SqliteSideRecords::ProviderSend(const std::string& idempotency_key, const std::string& text,
                                     Clock& clock) {
  std::string now = FormatTimestamp(clock.Now());
  // The provider's own bookkeeping is atomic: the email and the request log together.
  Transaction tx(*connection_, TransactionKind::kImmediate);
  const bool sent =
      connection_
          ->Cached("INSERT INTO SentEmails (IdempotencyKey, Text, SentAt) VALUES (?1, ?2, ?3)")
          .Bind(1, idempotency_key)
          .Bind(2, text)
          .Bind(3, now)
          .ExecuteInsert() == InsertResult::kInserted;
  connection_
      ->Cached("INSERT INTO ProviderRequests (IdempotencyKey, Result, At) VALUES (?1, ?2, ?3)")
      .Bind(1, idempotency_key)
      .Bind(2, sent ? "sent" : "already sent")
      .Bind(3, now)
      .Execute();
  tx.Commit();
  return sent;
}

std::optional<std::string> SqliteSideRecords::ProviderFind(const std::string& idempotency_key) {
  Statement& query =
      connection_->Cached("SELECT SentAt FROM SentEmails WHERE IdempotencyKey = ?1");
  query.Bind(1, idempotency_key);
  std::optional<std::string> sent_at;
  if (query.Step()) sent_at = query.ColumnText(0);
  query.Reset();
  return sent_at;
}

int64_t SqliteSideRecords::ProviderSentCount() {
  Statement query = connection_->Prepare("SELECT count(*) FROM SentEmails");
  query.Step();
  return query.ColumnInt(0);
}

int64_t SqliteSideRecords::ProviderRequestCount() {
  Statement query = connection_->Prepare("SELECT count(*) FROM ProviderRequests");
  query.Step();
  return query.ColumnInt(0);
}

}  // namespace dedupsim
