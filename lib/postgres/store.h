// The PostgreSQL side of the storage seam. PgDatabase is one schema dedupsim created and
// marked as its own (COMMENT ON SCHEMA, and on each table): it creates it where none
// exists, and refuses, with a DatabaseError, a schema or a table of our names that it did
// not create; it never drops or changes anything else. PgStore runs the consumers'
// statements on one PgConnection; PgBackend opens stores on a PgDatabase.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/timestamp.h"
#include "postgres/connection.h"
#include "store/explore_database.h"
#include "store/store.h"

namespace dedupsim {

class PgKeyedStores;

// The marker written on the schema and on every table dedupsim creates in it.
inline constexpr const char* kPgMarker =
    "dedupsim schema 2: created by dedupsim, which may reset it";

// A table or column name of ours as our CREATE TABLE statements spell it ("Reserved") for
// the name the server reports, folded to lower case ("reserved"): what the views show, as
// on SQLite. Any other name as it came.
std::string SchemaSpelling(const std::string& folded);

class PgDatabase final : public ExploreServer {
 public:
  // Connects to conninfo and opens the schema: creates it (with its tables, marked) when
  // missing; accepts it when it carries kPgMarker and so do its tables. Throws
  // DatabaseError, touching nothing, for a schema or table that is not dedupsim's, or a
  // server that cannot be reached.
  // With IfMissing::kFail (cleanup) nothing is created: a missing schema or table is a
  // DatabaseError.
  static PgDatabase Open(const std::string& conninfo, const std::string& schema,
                         IfMissing if_missing = IfMissing::kCreate);

  // A new connection with search_path set to the schema.
  PgConnection Connect() const;
  // The same, opened in the background (PgConnectionStart::Open gives it).
  PgConnectionStart StartConnect() const;
  const std::string& conninfo() const { return conninfo_; }
  const std::string& schema() const { return schema_; }
  // The explorer's database on this schema (postgres/explore_database.cpp).
  std::unique_ptr<ExploreDatabase> OpenExploreDatabase() const override;

 private:
  PgDatabase(std::string conninfo, std::string schema)
      : conninfo_(std::move(conninfo)), schema_(std::move(schema)) {}
  std::string conninfo_;
  std::string schema_;
};

// The database `dedupsim check --backend postgres` copies for each file on a server that
// has no template0 (a throwaway one: postgres/cluster.cpp drops both templates), made from
// `postgres` while nothing else is connected to it and marked as dedupsim's. Nobody
// connects to it, so copies of it may be made while other commands work.
inline constexpr const char* kPgCheckTemplate = "dedupsim_check_template";
// Two statements, each run alone (CREATE DATABASE cannot share a transaction).
inline constexpr const char* kPgCheckTemplateSql[] = {
    "CREATE DATABASE dedupsim_check_template TEMPLATE postgres",
    "COMMENT ON DATABASE dedupsim_check_template IS 'dedupsim schema 2: created by dedupsim, "
    "which may reset it'"};

class PgStore final : public Store {
 public:
  PgStore(PgConnection connection, Isolation isolation)
      : db_(std::move(connection)), isolation_(isolation) {}
  PgStore(const PgStore&) = delete;  // tables() keeps a reference to db_
  PgStore& operator=(const PgStore&) = delete;

  PgConnection& connection() { return db_; }

  // BEGIN with the session's isolation level (PostgreSQL ignores the SQLite kinds).
  void Begin(TransactionKind kind) override;
  // Throws PgError 25P02 when the server answered COMMIT with ROLLBACK: the transaction
  // had already failed, and nothing of it was kept.
  void Commit() override;
  void Rollback() override;
  bool InTransaction() const override { return db_.InTransaction(); }
  void Savepoint(std::string_view name) override;
  void RollbackToSavepoint(std::string_view name) override;
  void ReleaseSavepoint(std::string_view name) override;
  Isolation isolation() const override { return isolation_; }
  void SetIsolation(Isolation level) override { isolation_ = level; }
  void RunHook(const char* name, const Hook& hook) override;
  void SetHookFaults(HookFaults faults) override { hook_faults_ = std::move(faults); }
  void Note(const std::string& kind, const std::string& detail, const std::string& result) override;
  void SetDelivery(DeliveryRef delivery) override { db_.SetDelivery(std::move(delivery)); }
  void StampTrace(TraceEvent& e) const override { db_.Stamp(e); }
  void NoteOutcome(const std::string& outcome, const std::string& verdict) override {
    db_.NoteOutcome(outcome, verdict);
  }
  void SetTraceRole(std::string actor, std::string target) override {
    db_.SetTraceRole(std::move(actor), std::move(target));
  }
  std::vector<WatchedStatement> WatchedStatements() const override { return db_.watched(); }
  // Through a gate on the connection, so it cannot share one with the explorer's.
  void SetWaitListener(std::function<void()> on_wait) override;
  // SET lock_timeout and SET idle_in_transaction_session_timeout on the session.
  void SetLockTimeout(std::chrono::milliseconds timeout) override;
  void SetIdleInTransactionTimeout(std::chrono::milliseconds timeout) override;

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
  // On this connection (postgres/keyed_stores.h).
  KeyedStores& keyed() override;

  // On this store's connection (postgres/lesson_tables.h), made on first use.
  LessonTables& tables() override;
  // A file's statements in its PostgreSQL text (postgres/untrusted_sql.cpp), made on first use.
  UntrustedSql& untrusted() override;
  // The explorer's gate on the connection sees the point as it sees a hook's.
  void SchedulingPoint(std::string_view name) override;

 private:
  // The statement sql on db_, found by its text on the first call only (slot keeps it).
  PgStatement Hot(PgStatement& slot, const char* sql) {
    if (!slot.valid()) slot = db_.Statement(sql);
    return slot;
  }
  // The consumers' statements, each found once: a message's statements are run without a
  // lookup, a copy or a formatted string (the timestamp is written into stamp_).
  struct HotStatements {
    PgStatement begin[3];  // by Isolation
    PgStatement commit, rollback, add_reserved, read_stock;
    PgStatement claim_completed[2], claim_if_absent[2], claim_in_progress[2], complete[2],
        find[2];  // by InboxKey
  };

  PgConnection db_;
  Isolation isolation_;
  HotStatements hot_;
  TimestampFormatter stamp_;
  std::shared_ptr<PgKeyedStores> keyed_;  // made on first use; borrows db_ (remade after a move)
  std::shared_ptr<LessonTables> tables_;
  std::shared_ptr<UntrustedSql> untrusted_;  // made on first use; borrows db_
  std::unique_ptr<PgStepGate> wait_listener_;
  HookFaults hook_faults_;  // SetHookFaults  // the gate SetWaitListener put on db_
};

class PgBackend final : public Backend {
 public:
  PgBackend(const PgDatabase& db, Isolation isolation) : db_(db), isolation_(isolation) {}
  std::string_view name() const override { return "postgres"; }
  const PgDatabase& database() const { return db_; }
  // The store's connection is watched for lock waits from a side connection.
  std::unique_ptr<Store> Open(Recorder* recorder, const std::string& instance) const override;
  std::vector<std::string> ResetInventory(const StockItem& item) const override;
  void AddStock(const StockItem& item) const override;
  StockItem ReadStock(std::string_view book_id) const override;
  int64_t CountRows(std::string_view table) const override;
  // postgres/tables_reader.h
  std::unique_ptr<TablesReader> OpenTablesReader(const SideStores* sides) const override;
  // Polls pg_stat_activity from a side connection of its own, every millisecond.
  bool AwaitSessionGone(int server_pid, std::chrono::milliseconds wait) const override;

 private:
  const PgDatabase& db_;
  Isolation isolation_;
};

}  // namespace dedupsim
