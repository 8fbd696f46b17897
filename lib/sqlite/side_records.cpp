#include "sqlite/side_records.h"

#include <stdexcept>

#include "sqlite/statement.h"
#include "sqlite/transaction.h"

namespace dedupsim {

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
