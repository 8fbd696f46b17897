// The database the explorer (lib/explore/) schedules statements on, whichever the backend,
// so that the explorer names neither: SQLite's temporary files (sqlite/explore_database.h),
// or a PostgreSQL schema (postgres/explore_database.cpp, through ExploreServer). The
// explorer asks it to reset the tables before each schedule, to read back what a schedule
// left, and for each consumer instance's session: its store, its side records, the write
// locks it holds, and how it ends.
//
// Rules:
// - Each statement, hook and lock wait of a session is reported to its ExploreGate first,
//   which decides when the step is taken (a scheduler parks the instance there).
// - SQLite: a statement that finds the database locked calls OnBusy (file-level locks, two
//   files). PostgreSQL: a statement waiting in the server for a row lock calls Blocked, and
//   Released once it has its answer (waits_in_server() is true); no write locks are seen.
// - A database, its sessions and its readers are used by one thread at a time; the
//   database outlives its sessions and readers.
// Errors: DatabaseError (store/error.h) when the database cannot be had or used; the
// backends' StoreError from a consumer's statements; std::logic_error for a row that
// cannot run here (a second file on PostgreSQL).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "store/database_settings.h"
#include "store/records.h"
#include "store/side_store.h"
#include "store/store.h"
#include "store/tables_reader.h"
#include "trace/trace.h"

namespace dedupsim {

// A book on the shelf: its StockItems row (store/records.h).
using BookRow = StockItem;

// The tables one row of the explorer needs, as each backend reads them: SQLite runs schema
// once and reset before every schedule (and keeps the side store, or a test's own tables, in
// a second file); PostgreSQL's tables are made where the schema is, and pg_reset runs before
// every schedule. A row holds its one ExploreTables (explore/strategy.h: Strategy::tables).
struct ExploreTables {
  // SQL run once on the explorer's database (CREATE TABLE IF NOT EXISTS ...), and before
  // every schedule (DELETE FROM ...) after the explorer emptied Inbox and StockItems and
  // stocked each order's book. Either may be null.
  const char* schema = nullptr;
  const char* reset = nullptr;
  // On PostgreSQL the tables are made where the schema is (a consumer file's: its own
  // database, store/file_databases.h); this runs before every schedule there, after the
  // explorer emptied its own tables (null: nothing more).
  const char* pg_reset = nullptr;
  // The side store kept in a second database file (a cache kept apart from the service's
  // data), made with its tables and emptied before each schedule as the backend that keeps
  // it says (lib/sqlite/side_records.h). When it is not kNone, ExploreAttempt::side() is a
  // scheduled connection to that file, and the row runs on SQLite only.
  SideStoreKind side = SideStoreKind::kNone;
  // Test only: a second file's own tables and the statements that empty them, in place of
  // a side store's (side stays kNone).
  const char* test_aux_schema = nullptr;
  const char* test_aux_reset = nullptr;
  // A side store, or a test's own tables.
  bool KeepsSecondFile() const {
    return side != SideStoreKind::kNone || test_aux_schema != nullptr;
  }
};

// A row's tables as the explorer hands them to its database: the address of the row's own
// ExploreTables names the row (the same address is the same tables); name is the row's, for
// errors.
struct ExploreRow {
  std::string_view name;
  const ExploreTables* tables = nullptr;
};

// The files a session's statements run on (SQLite's; PostgreSQL's one schema is kMain).
inline constexpr uint8_t kExploreMainFile = 1;
inline constexpr uint8_t kExploreSecondFile = 2;

// Called by a session before every step: the explorer's scheduler (lib/explore/worker.h).
class ExploreGate {
 public:
  virtual ~ExploreGate() = default;
  // Before a statement on file; in_transaction: whether the connection was in a
  // transaction then (SQLite's). May park, or throw SimulatedCrash.
  virtual void BeforeStatement(uint8_t file, std::string_view sql, bool in_transaction) = 0;
  // Before a hook point runs. May park, or throw SimulatedCrash.
  virtual void BeforeHook(std::string_view name) = 0;
  // SQLite: the statement found file locked. True: try again; false: fail with SQLITE_BUSY.
  virtual bool OnBusy(uint8_t file) = 0;
  // PostgreSQL: the server shows the statement waiting for a lock another backend holds.
  // True: look again; false: give the statement up (cancelled).
  virtual bool Blocked() = 0;
  // PostgreSQL: the statement that was Blocked has its answer.
  virtual void Released() = 0;
};

// What one delivery attempt runs on; valid until destroyed (at the attempt's end).
class ExploreAttempt {
 public:
  virtual ~ExploreAttempt() = default;
  virtual Store& store() = 0;
  // The second file's records on the session's scheduled connection, or null.
  virtual SideRecords* side() = 0;
};

// One consumer instance's connections. Open reopens what a crash closed.
class ExploreSession {
 public:
  virtual ~ExploreSession() = default;
  // Opens what is closed: the main connection, and the second file's when second_file
  // (SQLite, where the database keeps one). Traces to recorder as instance (null: no trace),
  // the second file's statements with target.
  virtual void Open(bool second_file, Recorder* recorder, const std::string& instance,
                    const char* target) = 0;
  // SQLite: forgets its connections (the next Open opens new ones); PostgreSQL keeps its one.
  virtual void Forget() = 0;
  virtual void SetDelivery(const DeliveryRef& delivery) = 0;
  virtual std::unique_ptr<ExploreAttempt> Attempt() = 0;
  // kExploreMainFile | kExploreSecondFile: the files its connections hold the write lock
  // on (SQLite; 0 on PostgreSQL), and those open.
  virtual uint8_t WriteLocks() const = 0;
  virtual uint8_t OpenFiles() const = 0;
  // A dead process's end: closes every connection without a commit (PostgreSQL: waits
  // until the server's backend is gone, so its locks are).
  virtual void Close() = 0;
  // An abandoned run: PostgreSQL rolls back and keeps the connection, unless anything
  // unexpected happens (then it closes, as Close); SQLite closes.
  virtual void Unwind() = 0;
};

class ExploreDatabase {
 public:
  virtual ~ExploreDatabase() = default;
  // PostgreSQL: locks are waited for in the server (Blocked, Released); SQLite: OnBusy.
  virtual bool waits_in_server() const = 0;
  // Readies tables met for the first time (SQLite runs the schema, a consumer file's
  // sandboxed); nothing for tables known.
  virtual void Add(const ExploreRow& row) = 0;
  // Before a schedule: Inbox and StockItems emptied, books stocked, every known row's
  // tables reset (PostgreSQL: the subscribers' pg_reset). Adds subscribers first.
  virtual void Reset(const std::vector<BookRow>& books,
                     std::span<const ExploreRow> subscribers) = 0;
  // StockItems as it is now, by BookId.
  virtual std::vector<BookRow> ReadBooks() = 0;
  // Inbox's rows: counted now on SQLite; on PostgreSQL as the last ReadBooks read them.
  virtual int64_t InboxRows() = 0;
  // SentEmails rows of the provider's second file with this Text (0 without one).
  virtual int64_t ProviderEmailsSent(const std::string& text) = 0;
  // The main file's tables in the order of its schema (SQLite; empty on PostgreSQL).
  virtual const std::vector<std::string>& main_tables() const = 0;
  // Every table as the last schedule left it (committed rows), the second file's with them
  // when second_file.
  virtual std::unique_ptr<TablesReader> OpenTablesReader(bool second_file) const = 0;
  // A new instance's session; gate outlives it. Opens nothing until Open.
  virtual std::unique_ptr<ExploreSession> NewSession(ExploreGate& gate, Isolation isolation) = 0;
};

// A server's database the explorer may run on (PostgreSQL's schema, postgres/store.h's
// PgDatabase): each Open gives a database of its own connections there. It must outlive
// what it opened.
class ExploreServer {
 public:
  virtual ~ExploreServer() = default;
  virtual std::unique_ptr<ExploreDatabase> OpenExploreDatabase() const = 0;
};

}  // namespace dedupsim
