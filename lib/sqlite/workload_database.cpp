#include "sqlite/workload_database.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include "sqlite/raw_inbox.h"
#include "sqlite/statement.h"
#include "sqlite/store.h"
#include "sqlite/transaction.h"

namespace dedupsim {

void CountTransactions(sqlite3* db, TransactionCounts* counts) {
  sqlite3_commit_hook(
      db,
      [](void* arg) {
        static_cast<TransactionCounts*>(arg)->commits++;
        return 0;  // 0: let the commit go ahead
      },
      counts);
  sqlite3_rollback_hook(
      db, [](void* arg) { static_cast<TransactionCounts*>(arg)->rollbacks++; }, counts);
}

void StockBooks(Connection& connection, const std::vector<std::string>& books) {
  Transaction tx(connection, TransactionKind::kImmediate);
  Statement insert = connection.Prepare(
      "INSERT INTO StockItems (BookId, Title, OnHand, Reserved) VALUES (?1, ?2, ?3, 0)");
  int64_t n = 0;
  for (const std::string& book : books) {
    insert.Bind(1, book).Bind(2, fmt::format("Book {}", ++n)).Bind(3, int64_t{1000000});
    insert.Execute();
  }
  tx.Commit();
}

std::unordered_map<std::string, int64_t> ReadReserved(Connection& connection) {
  std::unordered_map<std::string, int64_t> reserved;
  Statement query = connection.Prepare("SELECT BookId, Reserved FROM StockItems");
  while (query.Step()) reserved[query.ColumnText(0)] = query.ColumnInt(1);
  query.Reset();
  return reserved;
}

SqliteMeasuredSession::SqliteMeasuredSession(const DatabaseFile& db)
    : connection_(db.Connect()),
      store_(std::make_unique<SqliteStore>(connection_)),
      counts_(std::make_unique<TransactionCounts>()) {
  CountTransactions(connection_.handle(), counts_.get());
}

Store& SqliteMeasuredSession::store() { return *store_; }

void SqliteWorkloadDatabase::StockBooks(const std::vector<std::string>& books) const {
  Connection setup = db_.Connect();
  dedupsim::StockBooks(setup, books);
}

void SqliteWorkloadDatabase::Settle() const {
  Connection setup = db_.Connect();
  setup.ExecScript("PRAGMA wal_checkpoint(TRUNCATE)");
}

std::unordered_map<std::string, int64_t> SqliteWorkloadDatabase::ReadReserved() const {
  Connection check = db_.Connect();
  return dedupsim::ReadReserved(check);
}

std::unique_ptr<MeasuredSession> SqliteWorkloadDatabase::OpenSession() const {
  auto session = std::make_unique<SqliteMeasuredSession>(db_);
  if (!automatic_checkpoints_) sqlite3_wal_autocheckpoint(session->handle(), 0);
  return session;
}

std::unique_ptr<RawInbox> SqliteWorkloadDatabase::OpenRawInbox() const {
  auto raw = std::make_unique<SqliteRawInbox>(db_.path(), db_.settings().synchronous,
                                              db_.settings().busy_timeout);
  if (!automatic_checkpoints_) sqlite3_wal_autocheckpoint(raw->handle(), 0);
  return raw;
}

void SqliteWorkloadDatabase::Rethrow(const DatabaseError& e) const { throw InDatabase(db_.path(), e); }

}  // namespace dedupsim
