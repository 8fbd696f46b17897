#include "sqlite/store.h"

#include "database.h"
#include "database_setup.h"
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
  // A fixed text: the connection's statement cache finds it without building SQL.
  Statement& update =
      db_->Cached("UPDATE StockItems SET Reserved = Reserved + ?1 WHERE BookId = ?2");
  update.Reset();  // free when the last execution ended normally
  update.Bind(1, quantity)
      .BindUntilReset(2, book_id)  // the caller's text outlives the execution
      .Execute();
}

InsertResult SqliteStore::ClaimCompleted(InboxKey key, std::string_view message_id,
                                         std::string_view consumer, TimePoint now) {
  Statement& insert = db_->Cached(ClaimCompletedSql(key));  // one fixed text per key shape
  const std::string_view stamp = stamp_.Format(now);        // valid until the next Format
  insert.Reset();  // free when the last execution ended normally
  // Every text outlives the execution: bound without copies.
  return insert.BindUntilReset(1, message_id)
      .BindUntilReset(2, consumer)
      .BindUntilReset(3, stamp)
      .BindUntilReset(4, stamp)
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
  SetUpWithoutFsync(connection, db_.temporary());  // dedupsim's set-up, not the lesson's
  dedupsim::ResetInventory(connection, item);
}

void SqliteBackend::AddStock(const StockItem& item) const {
  Connection connection = db_.Connect();
  SetUpWithoutFsync(connection, db_.temporary());  // dedupsim's set-up, not the lesson's
  connection
      .Prepare("INSERT INTO StockItems (BookId, Title, OnHand, Reserved) VALUES (?1, ?2, ?3, ?4)")
      .Bind(1, item.book_id)
      .Bind(2, item.title)
      .Bind(3, item.on_hand)
      .Bind(4, item.reserved)
      .Execute();
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
