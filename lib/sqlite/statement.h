// A prepared statement: RAII over sqlite3_stmt. Created by Connection::Prepare and valid
// while its connection is open. When the connection traces, each execution (the first
// Step after a reset) is recorded with its result and the time it waited for a lock. An
// execution that returns rows is recorded when it ends (done, an error, a reset, or the
// statement's end), stamped when its first step ended, with the rows it read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <memory>

#include "store/records.h"

struct sqlite3_stmt;

namespace dedupsim {

class Connection;
struct TraceEvent;

class Statement {
 public:
  Statement(Connection& connection, sqlite3_stmt* stmt);
  ~Statement();
  Statement(Statement&&) noexcept;
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are numbered from 1, as in SQLite. Text is copied: value need not outlive
  // the call.
  Statement& Bind(int index, int64_t value);
  Statement& Bind(int index, int value) { return Bind(index, static_cast<int64_t>(value)); }
  Statement& Bind(int index, std::string_view value);
  Statement& Bind(int index, const char* value) { return Bind(index, std::string_view(value)); }
  Statement& BindNull(int index);
  // Binds text without copying it (SQLITE_STATIC): value must stay valid and unchanged
  // until this statement is next reset (Execute and ExecuteInsert reset it). For a hot
  // path whose text outlives the execution: a message's id, a constant, a stamp buffer.
  Statement& BindUntilReset(int index, std::string_view value);

  // Steps once: true when a row is ready, false when done. Throws SqliteError.
  bool Step();
  // Steps until done, then resets so the statement can run again. Throws SqliteError.
  void Execute();
  // Like Execute, but a duplicate primary key or unique key (1555, 2067) is a result, not
  // an error. The statement is reset either way.
  InsertResult ExecuteInsert();
  // Resets for another execution and clears bindings. Free when nothing was bound or
  // stepped since the last reset.
  void Reset();

  int64_t ColumnInt(int index) const;
  std::string ColumnText(int index) const;
  bool ColumnIsNull(int index) const;
  bool ColumnIsInteger(int index) const;  // SQLite stored an INTEGER there

  // Extended result code of the last step (0 after a success).
  int last_code() const { return last_code_; }
  std::string sql() const;
  // SQLite's reading of the statement when the connection traces (see TraceEvent::op and
  // table); "" on an untraced connection.
  const std::string& op() const { return op_; }
  const std::string& table() const { return table_; }

  // The statement's parameters, numbered from 1; a named one (":MessageId") keeps its
  // prefix, an anonymous "?" is "".
  int ParameterCount() const;
  std::string ParameterName(int index) const;

 private:
  int StepRaw();  // steps, records the trace event on the first step of an execution
  [[noreturn]] void Fail(int rc);
  void RecordPending() noexcept;  // records the execution that returned rows, if any
  friend class Connection;  // rebinds connection_ when the connection moves

  Connection* connection_;
  sqlite3_stmt* stmt_;
  bool started_ = false;
  bool dirty_ = false;  // bound or stepped since the last reset
  int last_code_ = 0;
  // The copies of bound text, one per parameter, sized once so SQLite can point into them
  // (SQLITE_STATIC) and reused so a hot statement's binds allocate nothing after the first.
  std::vector<std::string> text_;
  // On a traced connection only: each parameter's bound value as text, for the trace
  // event's `values` (what a key was made of).
  std::vector<std::string> traced_values_;
  void Traced(int index, std::string value);
  std::string op_;
  std::string table_;
  // SQLite's reading: the statement may update a row (an INSERT's ON CONFLICT ... DO UPDATE);
  // on a traced connection only.
  bool may_update_ = false;
  std::unique_ptr<TraceEvent> pending_;  // an execution that returned rows, still reading
};

}  // namespace dedupsim
