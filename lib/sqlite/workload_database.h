// The bench's and the soak's database on SQLite (store/workload_database.h): a database
// file, its books stocked and read back, and measured connections to it: a SqliteStore
// over a Connection of its own, or the raw baseline (sqlite/raw_inbox.h). Transactions are
// counted by SQLite's commit and rollback hooks, waits by each connection's busy handler.
//
// With automatic checkpoints off, every connection opened runs with wal_autocheckpoint 0:
// no WAL checkpoint while the deliveries are timed, to show what SQLite's checkpoint work
// costs (bench --checkpoints after).
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "sqlite/connection.h"
#include "sqlite/database.h"
#include "store/databases.h"
#include "store/workload_database.h"

struct sqlite3;

namespace dedupsim {

// Counts what SQLite itself reports ending on db: the hooks run inside sqlite3_step, once
// per transaction, and cost a call each. counts must outlive db's hooks.
void CountTransactions(sqlite3* db, TransactionCounts* counts);

// Inserts a StockItems row for every book ("Book N", a million on hand, nothing reserved),
// in one BEGIN IMMEDIATE transaction on connection.
void StockBooks(Connection& connection, const std::vector<std::string>& books);
// Reserved of every StockItems row, by BookId.
std::unordered_map<std::string, int64_t> ReadReserved(Connection& connection);

// A connection of its own to a database file, the consumer's store over it, counted.
class SqliteMeasuredSession final : public MeasuredSession {
 public:
  explicit SqliteMeasuredSession(const DatabaseFile& db);
  Store& store() override;
  BusyStats busy() const override { return connection_.busy(); }
  TransactionCounts transactions() const override { return *counts_; }
  void OnTransactionChange(std::function<void(bool open)> callback) override {
    connection_.OnTransactionChange(std::move(callback));
  }
  sqlite3* handle() const { return connection_.handle(); }

 private:
  Connection connection_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<TransactionCounts> counts_;  // on the heap: the hooks hold its address
};

class SqliteWorkloadDatabase final : public WorkloadDatabase {
 public:
  // db must outlive this object.
  explicit SqliteWorkloadDatabase(const DatabaseFile& db, bool automatic_checkpoints = true)
      : db_(db), automatic_checkpoints_(automatic_checkpoints) {}

  void StockBooks(const std::vector<std::string>& books) const override;
  void Settle() const override;
  std::unordered_map<std::string, int64_t> ReadReserved() const override;
  std::unique_ptr<MeasuredSession> OpenSession() const override;
  std::unique_ptr<RawInbox> OpenRawInbox() const override;
  void FillQueue(const std::vector<OrderPlaced>& messages) const override;
  std::unique_ptr<BrokerQueue> OpenQueue(
      std::chrono::milliseconds lease, int64_t consumer,
      const std::function<void(bool open)>& count_open) const override;
  BrokerCounts ReadQueueCounts() const override;
  std::unordered_set<std::string> UnackedOrders() const override;
  // InDatabase: the message names the file.
  [[noreturn]] void Rethrow(const DatabaseError& e) const override;

 private:
  const DatabaseFile& db_;
  bool automatic_checkpoints_;
};

// The Databases of SQLite (store/databases.h): each CreateWorkload a new temporary file
// with the settings (removed with the database made of it), or, when path names one, that
// file, opened with the settings and kept (its StockBooks first empties what a run before
// left there, as PostgreSQL's schema is emptied).
class SqliteDatabases final : public Databases {
 public:
  explicit SqliteDatabases(std::string path = "") : path_(std::move(path)) {}
  std::string_view backend() const override { return "sqlite"; }
  std::unique_ptr<WorkloadDatabase> CreateWorkload(const WorkloadSettings& settings) const override;

 private:
  std::string path_;
};

}  // namespace dedupsim
