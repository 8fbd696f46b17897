#include "sqlite/workload_database.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include "sqlite/durable_queue.h"
#include "sqlite/raw_inbox.h"
#include "sqlite/schema.h"
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
  if (!db_.temporary()) {
    // A kept file (soak --db): what a run before left goes first; one made by an older
    // dedupsim may lack a table.
    CreateSchema(setup);
    setup.ExecScript(
        "BEGIN IMMEDIATE; DELETE FROM Inbox; DELETE FROM StockItems; "
        "DELETE FROM StockReservations; COMMIT;");
  }
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

void SqliteWorkloadDatabase::FillQueue(const std::vector<OrderPlaced>& messages) const {
  Connection setup = db_.Connect();
  ResetBroker(setup);
  Enqueue(setup, messages);
}

std::unique_ptr<BrokerQueue> SqliteWorkloadDatabase::OpenQueue(
    std::chrono::milliseconds lease, int64_t consumer,
    const std::function<void(bool open)>& count_open) const {
  // The queue owns its connection.
  class Owned final : public BrokerQueue {
   public:
    Owned(Connection c, std::chrono::milliseconds lease, int64_t consumer)
        : c_(std::move(c)), broker_(c_, lease, consumer) {}
    std::optional<LeasedDelivery> Receive() override { return broker_.Receive(); }
    bool Ack(const LeasedDelivery& d, bool processed) override {
      return broker_.Ack(d, processed);
    }
    bool AllAcked() override { return broker_.AllAcked(); }
    Connection& connection() { return c_; }

   private:
    Connection c_;
    DurableBroker broker_;
  };
  auto owned = std::make_unique<Owned>(db_.Connect(), lease, consumer);
  owned->connection().OnTransactionChange(count_open);
  return owned;
}

BrokerCounts SqliteWorkloadDatabase::ReadQueueCounts() const {
  Connection check = db_.Connect();
  return ReadBrokerCounts(check);
}

std::unordered_set<std::string> SqliteWorkloadDatabase::UnackedOrders() const {
  Connection check = db_.Connect();
  return dedupsim::UnackedOrders(check);
}

void SqliteWorkloadDatabase::Rethrow(const DatabaseError& e) const { throw InDatabase(db_.path(), e); }

namespace {

// A workload's database with its file: a temporary file goes with it.
class OwnedSqliteWorkload final : public WorkloadDatabase {
 public:
  OwnedSqliteWorkload(DatabaseFile file, bool automatic_checkpoints)
      : file_(std::move(file)), db_(file_, automatic_checkpoints) {}
  void StockBooks(const std::vector<std::string>& books) const override { db_.StockBooks(books); }
  void Settle() const override { db_.Settle(); }
  std::unordered_map<std::string, int64_t> ReadReserved() const override {
    return db_.ReadReserved();
  }
  std::unique_ptr<MeasuredSession> OpenSession() const override { return db_.OpenSession(); }
  std::unique_ptr<RawInbox> OpenRawInbox() const override { return db_.OpenRawInbox(); }
  void FillQueue(const std::vector<OrderPlaced>& messages) const override {
    db_.FillQueue(messages);
  }
  std::unique_ptr<BrokerQueue> OpenQueue(
      std::chrono::milliseconds lease, int64_t consumer,
      const std::function<void(bool open)>& count_open) const override {
    return db_.OpenQueue(lease, consumer, count_open);
  }
  BrokerCounts ReadQueueCounts() const override { return db_.ReadQueueCounts(); }
  std::unordered_set<std::string> UnackedOrders() const override { return db_.UnackedOrders(); }
  [[noreturn]] void Rethrow(const DatabaseError& e) const override { db_.Rethrow(e); }

 private:
  DatabaseFile file_;           // declared first: outlives db_, which refers to it
  SqliteWorkloadDatabase db_;
};

}  // namespace

std::unique_ptr<WorkloadDatabase> SqliteDatabases::CreateWorkload(
    const WorkloadSettings& settings) const {
  return std::make_unique<OwnedSqliteWorkload>(
      path_.empty() ? DatabaseFile::CreateTemporary(settings.file)
                    : DatabaseFile::Open(path_, settings.file),
      settings.automatic_checkpoints);
}

}  // namespace dedupsim
