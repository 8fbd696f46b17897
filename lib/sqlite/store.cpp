#include "sqlite/store.h"

#include "database.h"
#include "schema.h"
#include "sqlite/statement.h"
#include "sqlite/transaction.h"

namespace dedupsim {

namespace {

// One fixed text per statement and key: the connection's cache finds it without building
// the SQL on every call.
const char* ClaimCompletedSql(InboxKey key) {
  return key == InboxKey::kMessageIdOnly
             ? "INSERT INTO InboxByMessageId (MessageId, Consumer, ReceivedAt, CompletedAt) "
               "VALUES (?1, ?2, ?3, ?4)"
             : "INSERT INTO Inbox (MessageId, Consumer, ReceivedAt, CompletedAt) "
               "VALUES (?1, ?2, ?3, ?4)";
}

const char* ClaimInProgressSql(InboxKey key) {
  return key == InboxKey::kMessageIdOnly
             ? "INSERT INTO InboxByMessageId (MessageId, Consumer, ReceivedAt, CompletedAt) "
               "VALUES (?1, ?2, ?3, NULL)"
             : "INSERT INTO Inbox (MessageId, Consumer, ReceivedAt, CompletedAt) "
               "VALUES (?1, ?2, ?3, NULL)";
}

const char* CompleteSql(InboxKey key) {
  return key == InboxKey::kMessageIdOnly
             ? "UPDATE InboxByMessageId SET CompletedAt = ?1 WHERE MessageId = ?2 AND Consumer = ?3"
             : "UPDATE Inbox SET CompletedAt = ?1 WHERE MessageId = ?2 AND Consumer = ?3";
}

}  // namespace

void SqliteStore::Begin(TransactionKind kind) { db_->Cached(BeginSql(kind)).Execute(); }

void SqliteStore::Commit() { db_->Cached("COMMIT").Execute(); }

void SqliteStore::Rollback() {
  if (db_->is_open() && db_->InTransaction()) db_->Cached("ROLLBACK").Execute();
}

bool SqliteStore::InTransaction() const { return db_->is_open() && db_->InTransaction(); }

void SqliteStore::RunHook(const char* name, const Hook& hook) {
  dedupsim::RunHook(*db_, name, hook);
}

void SqliteStore::Note(const std::string& kind, const std::string& detail,
                       const std::string& result) {
  db_->Note(kind, detail, result);
}

void SqliteStore::AddReserved(std::string_view book_id, int64_t quantity) {
  db_->Cached("UPDATE StockItems SET Reserved = Reserved + ?1 WHERE BookId = ?2")
      .Bind(1, quantity)
      .Bind(2, book_id)
      .Execute();
}

InsertResult SqliteStore::ClaimCompleted(InboxKey key, std::string_view message_id,
                                         std::string_view consumer, TimePoint now) {
  std::string stamp = FormatTimestamp(now);
  return db_->Cached(ClaimCompletedSql(key))
      .Bind(1, message_id)
      .Bind(2, consumer)
      .Bind(3, stamp)
      .Bind(4, stamp)
      .ExecuteInsert();
}

InsertResult SqliteStore::ClaimInProgress(InboxKey key, std::string_view message_id,
                                          std::string_view consumer, TimePoint now) {
  return db_->Cached(ClaimInProgressSql(key))
      .Bind(1, message_id)
      .Bind(2, consumer)
      .Bind(3, FormatTimestamp(now))
      .ExecuteInsert();
}

void SqliteStore::Complete(InboxKey key, std::string_view message_id, std::string_view consumer,
                           TimePoint now) {
  db_->Cached(CompleteSql(key))
      .Bind(1, FormatTimestamp(now))
      .Bind(2, message_id)
      .Bind(3, consumer)
      .Execute();
}

std::optional<InboxRow> SqliteStore::Find(InboxKey key, std::string_view message_id,
                                          std::string_view consumer) {
  return FindInboxRow(*db_, key, message_id, consumer);
}

std::unique_ptr<Store> SqliteBackend::Open(Recorder* recorder, const std::string& instance) const {
  Connection connection = db_.Connect();
  if (recorder != nullptr) connection.SetTrace(recorder, instance);
  return std::make_unique<SqliteStore>(std::move(connection));
}

void SqliteBackend::ResetInventory(const StockItem& item) const {
  Connection connection = db_.Connect();
  dedupsim::ResetInventory(connection, item);
}

StockItem SqliteBackend::ReadStock(std::string_view book_id) const {
  Connection connection = db_.Connect();
  return dedupsim::ReadStock(connection, book_id);
}

int64_t SqliteBackend::CountRows(std::string_view table) const {
  Connection connection = db_.Connect();
  return dedupsim::CountRows(connection, table);
}

}  // namespace dedupsim
