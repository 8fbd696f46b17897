#include "sqlite/store.h"

#include <stdexcept>

#include "sqlite/database.h"
#include "sqlite/run_hook.h"
#include "sqlite/schema.h"
#include "sqlite/statement.h"
#include "sqlite/table_probe.h"
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

Statement& SqliteStore::Hot(Statement*& slot, const char* sql) {
  const uint64_t generation = db_->cache_generation();
  if (hot_.generation != generation) hot_ = HotStatements{.generation = generation};  // clears slot
  if (slot == nullptr) {
    slot = &db_->Cached(sql);  // reset by the cache
  } else {
    slot->Reset();  // free when the last execution ended normally
  }
  return *slot;
}

void SqliteStore::Begin(TransactionKind kind) {
  Hot(hot_.begin[static_cast<size_t>(kind)], BeginSql(kind)).Execute();
}

void SqliteStore::Commit() { Hot(hot_.commit, "COMMIT").Execute(); }

void SqliteStore::Rollback() {
  if (db_->is_open() && db_->InTransaction()) Hot(hot_.rollback, "ROLLBACK").Execute();
}

bool SqliteStore::InTransaction() const { return db_->is_open() && db_->InTransaction(); }

void SqliteStore::Savepoint(std::string_view name) {
  db_->Cached("SAVEPOINT " + std::string(name)).Execute();
}

void SqliteStore::RollbackToSavepoint(std::string_view name) {
  db_->Cached("ROLLBACK TO SAVEPOINT " + std::string(name)).Execute();
}

void SqliteStore::ReleaseSavepoint(std::string_view name) {
  db_->Cached("RELEASE SAVEPOINT " + std::string(name)).Execute();
}

void SqliteStore::SchedulingPoint(std::string_view name) {
  if (db_->gate() != nullptr) db_->gate()->BeforeHook(*db_, name);
}

void SqliteStore::RunHook(const char* name, const Hook& hook) {
  dedupsim::RunHook(*db_, name, hook);
}

void SqliteStore::Note(const std::string& kind, const std::string& detail,
                       const std::string& result) {
  db_->Note(kind, detail, result);
}

StockItem SqliteStore::ReadStock(std::string_view book_id) {
  return dedupsim::ReadStock(*db_, book_id);
}

void SqliteStore::AddReserved(std::string_view book_id, int64_t quantity) {
  Statement& update =
      Hot(hot_.add_reserved, "UPDATE StockItems SET Reserved = Reserved + ?1 WHERE BookId = ?2");
  update.Bind(1, quantity)
      .BindUntilReset(2, book_id)  // the caller's text outlives the execution
      .Execute();
}

InsertResult SqliteStore::ClaimCompleted(InboxKey key, std::string_view message_id,
                                         std::string_view consumer, TimePoint now) {
  Statement& insert = Hot(hot_.claim_completed[static_cast<size_t>(key)], ClaimCompletedSql(key));
  const std::string_view stamp = stamp_.Format(now);  // valid until the next Format
  // Every text outlives the execution: bound without copies.
  return insert.BindUntilReset(1, message_id)
      .BindUntilReset(2, consumer)
      .BindUntilReset(3, stamp)
      .BindUntilReset(4, stamp)
      .ExecuteInsert();
}

InsertResult SqliteStore::ClaimCompletedIfAbsent(InboxKey key, std::string_view message_id,
                                                 std::string_view consumer, TimePoint now) {
  const std::string stamp = FormatTimestamp(now);
  db_->Cached(key == InboxKey::kMessageIdOnly
                  ? "INSERT INTO InboxByMessageId (MessageId, Consumer, ReceivedAt, CompletedAt) "
                    "VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING"
                  : "INSERT INTO Inbox (MessageId, Consumer, ReceivedAt, CompletedAt) "
                    "VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING")
      .Bind(1, message_id)
      .Bind(2, consumer)
      .Bind(3, stamp)
      .Bind(4, stamp)
      .Execute();
  return db_->Changes() == 0 ? InsertResult::kDuplicateKey : InsertResult::kInserted;
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

const DatabaseFile& SqliteFileOf(const Backend& backend) {
  const auto* sqlite = dynamic_cast<const SqliteBackend*>(&backend);
  if (sqlite == nullptr) {
    throw std::logic_error("internal: a lesson asked for the SQLite database of a run on a server");
  }
  return sqlite->file();
}

std::unique_ptr<Store> SqliteBackend::Open(Recorder* recorder, const std::string& instance) const {
  Connection connection = db_.Connect();
  if (recorder != nullptr) connection.SetTrace(recorder, instance);
  return std::make_unique<SqliteStore>(std::move(connection));
}

std::unique_ptr<TablesReader> SqliteBackend::OpenTablesReader(const SideStores* sides) const {
  // A run's side stores on SQLite sit beside its file (sqlite/side_store.h, HomeBeside).
  if (sides != nullptr) return std::make_unique<TableProbe>(db_.path());
  return std::make_unique<TableProbe>(
      std::vector<std::pair<std::string, std::string>>{{"database", db_.path()}});
}

std::vector<std::string> SqliteBackend::ResetInventory(const StockItem& item) const {
  // dedupsim's set-up, not the lesson's
  std::vector<std::string> emptied;
  db_.WithSetUpConnection(
      [&](Connection& connection) { emptied = dedupsim::ResetInventory(connection, item); });
  return emptied;
}

void SqliteBackend::AddStock(const StockItem& item) const {
  db_.WithSetUpConnection([&](Connection& connection) {  // dedupsim's set-up, not the lesson's
    connection
        .Prepare("INSERT INTO StockItems (BookId, Title, OnHand, Reserved) VALUES (?1, ?2, ?3, ?4)")
        .Bind(1, item.book_id)
        .Bind(2, item.title)
        .Bind(3, item.on_hand)
        .Bind(4, item.reserved)
        .Execute();
  });
}

StockItem SqliteBackend::ReadStock(std::string_view book_id) const {
  StockItem item;
  db_.WithReadConnection(
      [&](Connection& connection) { item = dedupsim::ReadStock(connection, book_id); });
  return item;
}

int64_t SqliteBackend::CountRows(std::string_view table) const {
  int64_t rows = 0;
  db_.WithReadConnection(
      [&](Connection& connection) { rows = dedupsim::CountRows(connection, table); });
  return rows;
}

}  // namespace dedupsim
