// The sandbox for SQL that dedupsim did not write: a consumer file's schema and steps, a
// scenario file's figures. It follows SQLite's guidance for running untrusted SQL
// (https://www.sqlite.org/security.html), and what a statement is and may touch is read
// from SQLite's own parse, never from its text:
//
// - The authorizer. While a statement is prepared (and while it runs, for what it runs
//   inside), SQLite reports each thing it will do as an action code: read or write a
//   table, call a function, create a table or an index, attach, pragma, begin. Each is
//   allowed or denied by the statement's use (SqlUse) and its tables; the first denial
//   says which rule it broke. A statement is a query, a write or a CREATE by the actions
//   it reported, never by its first word, so comments may stand anywhere.
// - The connection: SQLITE_DBCONFIG_DEFENSIVE on (no writable_schema, no writes to the
//   schema table), the two-argument fts3_tokenizer off, sqlite3_limit on lengths,
//   expression depth, compound selects, columns, parameters and attached databases.
// - A budget: a progress handler ends a statement once the thread that steps it has spent
//   its budget of CPU time in it (an endless recursive WITH), or it has written its budget
//   of database pages. CPU time, not wall time: a statement that waits for a lock (the
//   lesson) or on a loaded machine is not cut.
//
// Two halves, SQLite's side of store/untrusted_sql.h (which holds the rules, the check's
// answer and its errors). When a file is loaded, CheckOneStatement prepares its SQL on a
// scratch dedupsim database (UntrustedSqlChecker::NewScratch) and says what it is, or
// throws SqlRefused with the byte offset of the fault, so the file's reader reports
// FILE:LINE:COLUMN. When it runs, a SandboxScope holds the connection to the same rules
// (the tables the check found) for as long as it lives (RunUntrusted, a SQLite store's
// UntrustedSql), and RunSchema runs a schema one statement at a time under them.
//
// Not thread-safe: a connection is used by one thread at a time (connection.h), and so is
// a scope on it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sqlite/connection.h"
#include "store/untrusted_sql.h"

struct sqlite3;

namespace dedupsim {

// The database pages a scope's statements may write (10 MB of dedupsim's 4 KiB pages)
// before the statement is ended: within its CPU time an endless INSERT could write
// hundreds of MB.
inline constexpr int kStatementPagesWritten = 2560;

// Prepares, without running it, the statement of text that starts at or after from, on db
// under the rules of use, with every table now in db's main schema as the run's tables
// (and json_each, json_tree). nullopt when only whitespace, comments and ';' remain.
// Throws SqlRefused. Use on a scratch database: the check runs no statement.
std::optional<CheckedSql> CheckNextStatement(Connection& db, std::string_view text, size_t from,
                                             SqlUse use);
// Exactly one statement: throws SqlRefused when there is none or more than one.
CheckedSql CheckOneStatement(Connection& db, std::string_view text, SqlUse use);

// Runs a schema on db one statement at a time, each prepared and stepped under a scope with
// kSchema rules: own_tables are its own already (a kept database that an earlier run gave
// them); every other table that exists is reserved. Returns the tables that exist now and
// did not before, in the order of their names. Throws SqlRefused, at the statement.
std::vector<std::string> RunSchema(Connection& db, std::string_view text,
                                   const std::vector<std::string>& own_tables);

// While alive, every statement prepared or stepped on the connection is held to the rules:
// the authorizer denies what they do not allow, the connection is defensive and limited,
// and the progress handler ends a statement past the budget (counted from the scope's
// start). Destroyed: the connection's limits are as before and it has no guard. One scope
// per connection at a time; the rules and the connection must outlive it.
class SandboxScope {
 public:
  SandboxScope(Connection& db, const SqlRules& rules);
  ~SandboxScope();
  SandboxScope(const SandboxScope&) = delete;
  SandboxScope& operator=(const SandboxScope&) = delete;

  // The progress handler ended a statement: its CPU time or its pages written were spent.
  bool over_budget() const { return guard_.over_budget; }
  // Why the authorizer denied an action (the first one), or "" when it denied none.
  const std::string& refusal() const { return guard_.refusal; }
  // The name the refusal is about (a function, a table), or "".
  const std::string& refused_name() const { return guard_.refused_name; }
  // "... ran past its budget of 1000 ms of CPU time ...": the message for over_budget().
  std::string BudgetMessage() const;

  // What the authorizer saw and decided while the scope lived (sandbox.cpp fills it).
  struct Guard : StatementGuard {
    const SqlRules* rules = nullptr;
    std::vector<std::string> touched;  // tables read or written, lower case
    std::vector<std::string> created;  // tables created (kSchema), lower case
    std::vector<std::string> indexes;  // indexes created (kSchema), lower case
    bool selects = false;              // SQLITE_SELECT: the statement is (or holds) a query
    bool writes = false;               // a row of a run's table is inserted, updated, deleted
    bool creates = false;              // a table or index is created
    int actions = 0;                   // actions reported (0: none while it was prepared)
    std::string refusal;
    std::string refused_name;
    int64_t cpu_start_ns = 0;
    int64_t cpu_budget_ns = 0;
    sqlite3* db = nullptr;        // for the pages written
    int pages_written_start = 0;  // SQLITE_DBSTATUS_CACHE_WRITE when the scope began
    bool over_budget = false;     // past its CPU time, or past its pages written
    int Authorize(int action, const char* a1, const char* a2, const char* database,
                  const char* inner) override;
    void Deny(std::string reason, const char* name);
  };
  const Guard& guard() const { return guard_; }

 private:
  Connection& db_;
  Guard guard_;
  std::vector<std::pair<int, int>> saved_limits_;  // limit id, value before
};

// Runs statement on db in a SandboxScope with its rules (required: std::logic_error
// without), binding values by index: SQLite's UntrustedSql::Run. Throws SqlStopped when the
// scope ended it (past its budget) or denied what it did when it ran, SqliteError for every
// other failure (a duplicate key when statement.duplicate_is_error).
UntrustedAnswer RunUntrusted(Connection& db, const UntrustedStatement& statement);

// UntrustedSql on a SQLite connection (a store's, a side store's), which must outlive it.
class SqliteUntrustedSql final : public UntrustedSql {
 public:
  explicit SqliteUntrustedSql(Connection& db) : db_(db) {}
  std::string_view dialect() const override { return "sqlite"; }
  UntrustedAnswer Run(const UntrustedStatement& statement) override {
    return RunUntrusted(db_, statement);
  }
  void SetUpTables(const char* schema, const std::vector<std::string>& own_tables,
                   const char* reset) override {
    if (schema != nullptr) RunSchema(db_, schema, own_tables);
    if (reset != nullptr) db_.ExecScript(reset);
  }

 private:
  Connection& db_;
};

}  // namespace dedupsim
