#include "world/email_provider.h"

#include "sqlite/statement.h"
#include "sqlite/transaction.h"

namespace dedupsim {

SideStore CreateEmailProviderStore(const SideStoreHome& home) {
  return SideStore::CreateIn(home, kEmailProviderSuffix, R"sql(
    CREATE TABLE SentEmails (
      IdempotencyKey TEXT NOT NULL PRIMARY KEY,
      Text           TEXT NOT NULL,
      SentAt         TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE ProviderRequests (
      Id             INTEGER PRIMARY KEY,
      IdempotencyKey TEXT NOT NULL,
      Result         TEXT NOT NULL,
      At             TEXT NOT NULL
    );
  )sql");
}

void IdempotentEmailProvider::Send(const std::string& idempotency_key, const std::string& text) {
  SendWithKey(idempotency_key, text);
}

ProviderSend IdempotentEmailProvider::SendWithKey(const std::string& idempotency_key,
                                                  const std::string& text) {
  std::string now = FormatTimestamp(clock_.Now());
  // The provider's own bookkeeping is atomic: the email and the request log together.
  Transaction tx(connection_, TransactionKind::kImmediate);
  InsertResult sent =
      connection_.Cached("INSERT INTO SentEmails (IdempotencyKey, Text, SentAt) VALUES (?1, ?2, ?3)")
          .Bind(1, idempotency_key)
          .Bind(2, text)
          .Bind(3, now)
          .ExecuteInsert();
  ProviderSend result =
      sent == InsertResult::kInserted ? ProviderSend::kSent : ProviderSend::kAlreadySent;
  connection_.Cached("INSERT INTO ProviderRequests (IdempotencyKey, Result, At) VALUES (?1, ?2, ?3)")
      .Bind(1, idempotency_key)
      .Bind(2, result == ProviderSend::kSent ? "sent" : "already sent")
      .Bind(3, now)
      .Execute();
  tx.Commit();
  return result;
}

std::optional<std::string> IdempotentEmailProvider::Find(const std::string& idempotency_key) {
  Statement& query = connection_.Cached("SELECT SentAt FROM SentEmails WHERE IdempotencyKey = ?1");
  query.Bind(1, idempotency_key);
  std::optional<std::string> sent_at;
  if (query.Step()) sent_at = query.ColumnText(0);
  query.Reset();
  return sent_at;
}

int64_t IdempotentEmailProvider::SentCount() {
  Statement query = connection_.Prepare("SELECT count(*) FROM SentEmails");
  query.Step();
  return query.ColumnInt(0);
}

int64_t IdempotentEmailProvider::RequestCount() {
  Statement query = connection_.Prepare("SELECT count(*) FROM ProviderRequests");
  query.Step();
  return query.ColumnInt(0);
}

}  // namespace dedupsim
