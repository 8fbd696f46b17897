// SQL that dedupsim did not write (a consumer file's schema and steps, a scenario file's
// figures), through the backend seam: checked once when the file is read, then run on a
// store of the run under what the check found, so the code that reads and runs files never
// knows which database does either.
//
// - UntrustedSqlChecker: the check. A scratch database of the checking backend (SQLite,
//   whose parse and authorizer say what a statement is and may touch: lib/sqlite/
//   sandbox.h) prepares each statement without running it, or refuses it (SqlRefused, at
//   the byte of the fault); a schema is run there to learn the tables it makes. The check
//   runs nothing anywhere else. One thread at a time.
// - UntrustedSql: running a checked statement on one store's connection (Store::untrusted(),
//   SideRecords::untrusted()), in its open transaction if any, under the rules its check
//   found (SQLite), or as the file's own role with its statement_timeout (PostgreSQL: the
//   server's privileges are the rules there). A statement the database stopped for the
//   file's doing (past its budget, refused when it ran) throws SqlStopped; every other
//   failure is the store's (StoreError, store/error.h). One thread at a time, like its store.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/input_error.h"
#include "store/records.h"
#include "store/side_store.h"

namespace dedupsim {

// What a file's statement is for, and so what it may do.
enum class SqlUse {
  kSchema,  // create tables, and indexes on the tables it creates (CREATE TABLE, CREATE INDEX)
  kStep,    // read or write rows of the run's tables (SELECT, INSERT, UPDATE, DELETE, REPLACE)
  kFigure,  // read rows of the run's tables (SELECT)
};

// The CPU time one statement may take before it is ended (docs/reliability.md).
inline constexpr std::chrono::milliseconds kStatementBudget{1000};
// kStatementBudget; in the test build only (DEDUPSIM_TESTS), the milliseconds in
// DEDUPSIM_TEST_ONLY_STATEMENT_BUDGET_MS when set, so an end-to-end test of an endless
// statement costs a fraction of a second.
std::chrono::milliseconds StatementBudget();

// What a statement may touch. Table names compare as SQLite compares them (ASCII letters
// without case).
struct SqlRules {
  SqlUse use = SqlUse::kStep;
  // kStep, kFigure: the tables it may read (kStep: and write). kSchema: the tables that are
  // its own already (it may create them again and index them), besides those it creates.
  std::vector<std::string> tables;
  // kSchema: tables that exist and are not its own: it may read them, never create or
  // index them.
  std::vector<std::string> reserved;
  std::chrono::milliseconds budget = StatementBudget();
};

// A statement the check refused, or that the database could not prepare or run. what() is
// the reason, naming the rule broken; offset() is the byte of the text given where the
// fault is (the database's error offset, the name denied, or the statement's first token).
class SqlRefused : public InputError {
 public:
  SqlRefused(const std::string& reason, size_t offset, std::string statement)
      : InputError(reason), offset_(offset), statement_(std::move(statement)) {}
  size_t offset() const { return offset_; }
  // The statement, one line and cut (SqlForMessage), for "(in: ...)".
  const std::string& statement() const { return statement_; }

 private:
  size_t offset_;
  std::string statement_;
};

// What a checked statement is.
struct CheckedSql {
  size_t begin = 0;  // its first token in the text
  size_t end = 0;    // the first byte after it (SQLite's tail: after its ';' if any)
  bool query = false;      // returns rows (SELECT, or a write with RETURNING)
  bool read_only = false;  // changes nothing (sqlite3_stmt_readonly)
  std::vector<std::string> parameters;  // as written: ":BookId", "?1", "?" for an anonymous one
  // The rules it runs under later: its use and the tables it was seen to touch.
  SqlRules rules;
};

// The check of untrusted SQL on a scratch database.
class UntrustedSqlChecker {
 public:
  virtual ~UntrustedSqlChecker() = default;
  // A new scratch database of the checking backend (SQLite's, in a temporary file removed
  // with the checker), holding the tables a run has: the service's database (kNone), or a
  // side store's (kCache: CacheKeys; kEmailProvider: its records). Defined by the checking
  // backend (lib/sqlite/sandbox.cpp). Throws DatabaseError when it cannot be made.
  static std::unique_ptr<UntrustedSqlChecker> NewScratch(SideStoreKind tables = SideStoreKind::kNone);

  // Runs a schema on the scratch one statement at a time under kSchema rules: own_tables
  // are its own already; every other table that exists is reserved. Returns the tables that
  // exist now and did not before, in the order of their names. Throws SqlRefused.
  virtual std::vector<std::string> RunSchema(std::string_view text,
                                             const std::vector<std::string>& own_tables) = 0;
  // Prepares, without running it, exactly one statement of text under the rules of use,
  // with every table now in the scratch as the run's tables: what it is, or SqlRefused
  // (none, more than one, refused, or not prepared).
  virtual CheckedSql CheckOne(std::string_view text, SqlUse use) = 0;
};

// A value bound to a statement's parameter: an integer, or text.
using SqlValue = std::variant<int64_t, std::string>;

// One checked statement to run, in the dialect of the store it runs on (UntrustedSql::
// dialect()). Every reference is valid for the call only.
struct UntrustedStatement {
  std::string_view sql;
  const SqlRules* rules = nullptr;  // SQLite: the rules its check found (required there)
  std::vector<SqlValue> values;     // by parameter index: values[i] binds parameter i + 1
  bool query = false;               // it returns rows: read the first one
  // A duplicate key throws the database's error (StoreError, IsDuplicateKey) rather than
  // being answered as kDuplicateKey.
  bool duplicate_is_error = false;
};

// What a statement did.
struct UntrustedAnswer {
  bool row = false;                   // a query: it found a row
  std::optional<SqlValue> first;      // that row's first column; empty when NULL (or no row)
  InsertResult insert = InsertResult::kInserted;  // a write: kDuplicateKey when no row went in
  int64_t changes = 0;                // a write that went in: the rows it changed
};

// Running checked statements on one store's connection.
class UntrustedSql {
 public:
  virtual ~UntrustedSql() = default;
  // "sqlite" or "postgres": which of a file's texts and parameters this store runs.
  virtual std::string_view dialect() const = 0;
  // Runs statement on the connection, in its open transaction if one is. Throws SqlStopped
  // when the database stopped it for what it did (its budget, a rule it broke when it ran),
  // StoreError for every other failure.
  virtual UntrustedAnswer Run(const UntrustedStatement& statement) = 0;
  // Makes a consumer's own tables on this connection as a run begins: schema (null: none)
  // one statement at a time under kSchema rules (own_tables are its own already), then reset
  // (null: none), dedupsim's own statements that empty the consumer's tables
  // (ConsumerFile::EmptyTablesSql, a registry entry's reset). Throws SqlRefused for the
  // schema, DatabaseError where a file's tables are made elsewhere (PostgreSQL: by the
  // file's grading set-up, postgres/file_databases.h).
  virtual void SetUpTables(const char* schema, const std::vector<std::string>& own_tables,
                           const char* reset) = 0;
};

// A statement the database stopped when it ran, for the file's own doing: what() is the
// sentence ("this statement ran past its budget of 1000 ms of CPU time ...", "refused when
// it ran: ..."), for the file's reader to place at the statement.
class SqlStopped : public InputError {
 public:
  using InputError::InputError;
};

}  // namespace dedupsim
