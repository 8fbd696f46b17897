// The SQLite side of the storage seam: SqliteStore runs the post's consumers' statements on
// one Connection (the hot path: each statement prepared once per connection, from a fixed
// SQL text), and SqliteBackend opens stores on a dedupsim database file. The SQL and the
// traced steps are exactly those the consumers ran on the connection before the seam.
#pragma once

#include <memory>
#include <optional>

#include "core/timestamp.h"
#include "sqlite/connection.h"
#include "store/store.h"

namespace dedupsim {

class DatabaseFile;

class SqliteStore final : public Store {
 public:
  // Borrows db, which must outlive the store.
  explicit SqliteStore(Connection& db) : db_(&db) {}
  // Owns db.
  explicit SqliteStore(Connection&& db) : owned_(std::move(db)), db_(&*owned_) {}
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  Connection& connection() { return *db_; }

  void Begin(TransactionKind kind) override;
  void Commit() override;
  void Rollback() override;
  bool InTransaction() const override;
  void Savepoint(std::string_view name) override;
  void RollbackToSavepoint(std::string_view name) override;
  void ReleaseSavepoint(std::string_view name) override;
  // SQLite runs one writer at a time: every transaction is serializable, whatever is set.
  Isolation isolation() const override { return Isolation::kSerializable; }
  void SetIsolation(Isolation) override {}
  void RunHook(const char* name, const Hook& hook) override;
  void SetHookFaults(HookFaults faults) override { db_->SetHookFaults(std::move(faults)); }
  void Note(const std::string& kind, const std::string& detail, const std::string& result) override;
  void SetDelivery(DeliveryRef delivery) override { db_->SetDelivery(std::move(delivery)); }
  void StampTrace(TraceEvent& e) const override { db_->Stamp(e); }
  void NoteOutcome(const std::string& outcome, const std::string& verdict) override {
    db_->NoteOutcome(outcome, verdict);
  }
  void SetTraceRole(std::string actor, std::string target) override {
    db_->SetTraceRole(std::move(actor), std::move(target));
  }
  void SetWaitListener(std::function<void()> on_wait) override {
    db_->OnBlocked(std::move(on_wait));
  }
  // The connection's busy handler and lock history.
  LockWaits* lock_waits() override { return db_; }
  // The connection's busy timeout (Connection::SetBusyTimeout).
  void SetLockTimeout(std::chrono::milliseconds timeout) override { db_->SetBusyTimeout(timeout); }

  void AddReserved(std::string_view book_id, int64_t quantity) override;
  StockItem ReadStock(std::string_view book_id) override;

  InsertResult ClaimCompleted(InboxKey key, std::string_view message_id, std::string_view consumer,
                              TimePoint now) override;
  InsertResult ClaimCompletedIfAbsent(InboxKey key, std::string_view message_id,
                                      std::string_view consumer, TimePoint now) override;
  InsertResult ClaimInProgress(InboxKey key, std::string_view message_id, std::string_view consumer,
                               TimePoint now) override;
  void Complete(InboxKey key, std::string_view message_id, std::string_view consumer,
                TimePoint now) override;
  std::optional<InboxRow> Find(InboxKey key, std::string_view message_id,
                               std::string_view consumer) override;
  // On this connection (sqlite/keyed_stores.h).
  KeyedStores& keyed() override;

  // On this store's connection (sqlite/lesson_tables.h), made on first use.
  LessonTables& tables() override;
  // A file's statements in the sandbox (sqlite/sandbox.h), made on first use.
  UntrustedSql& untrusted() override;
  // The explorer's gate on the connection sees the point as it sees a hook's.
  void SchedulingPoint(std::string_view name) override;

 private:
  // The hot path's statements, found in the connection's cache on first use and kept
  // while the cache holds them (its generation unchanged): the connection owns them. A
  // lookup by SQL text hashes and compares the whole text; this is a pointer and a check.
  struct HotStatements {
    uint64_t generation = 0;   // 0: nothing kept
    Statement* begin[3] = {};  // by TransactionKind
    Statement* commit = nullptr;
    Statement* rollback = nullptr;
    Statement* claim_completed[2] = {};  // by InboxKey
    Statement* add_reserved = nullptr;
  };
  // The statement kept in slot, a member of hot_ (looked up by sql when none is kept),
  // reset for an execution.
  Statement& Hot(Statement*& slot, const char* sql);

  std::optional<Connection> owned_;
  Connection* db_;
  HotStatements hot_;
  std::shared_ptr<LessonTables> tables_;
  TimestampFormatter stamp_;  // ReceivedAt and CompletedAt, without allocating
  std::shared_ptr<KeyedStores> keyed_;  // made on first use
  std::shared_ptr<UntrustedSql> untrusted_;  // made on first use
};

// Stores on a dedupsim database file. The file must outlive the backend.
class SqliteBackend final : public Backend {
 public:
  explicit SqliteBackend(const DatabaseFile& db) : db_(db) {}
  std::string_view name() const override { return "sqlite"; }
  std::unique_ptr<Store> Open(Recorder* recorder, const std::string& instance) const override;
  std::vector<std::string> ResetInventory(const StockItem& item) const override;
  void AddStock(const StockItem& item) const override;
  StockItem ReadStock(std::string_view book_id) const override;
  int64_t CountRows(std::string_view table) const override;
  // sqlite/crash_recovery.h
  std::unique_ptr<CrashRecovery> WatchForCrash() const override;
  // Its file's tables through a read-only connection, and the side stores beside it
  // (sqlite/table_probe.h).
  std::unique_ptr<TablesReader> OpenTablesReader(const SideStores* sides) const override;
  const DatabaseFile& file() const { return db_; }

 private:
  const DatabaseFile& db_;
};

}  // namespace dedupsim
