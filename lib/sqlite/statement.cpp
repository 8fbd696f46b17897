#include "sqlite/statement.h"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include <fmt/format.h>

#include "sqlite/connection.h"
#include "sqlite/error.h"
#include "store/sql_text.h"
#include "trace/trace.h"

namespace dedupsim {

Statement::Statement(Connection& connection, sqlite3_stmt* stmt)
    : connection_(&connection),
      stmt_(stmt),
      text_(static_cast<size_t>(sqlite3_bind_parameter_count(stmt))) {}

Statement::~Statement() {
  RecordPending();
  sqlite3_finalize(stmt_);
}

Statement::Statement(Statement&& other) noexcept
    : connection_(other.connection_),
      stmt_(std::exchange(other.stmt_, nullptr)),
      started_(other.started_),
      dirty_(other.dirty_),
      last_code_(other.last_code_),
      text_(std::move(other.text_)),
      traced_values_(std::move(other.traced_values_)),
      op_(std::move(other.op_)),
      table_(std::move(other.table_)),
      may_update_(other.may_update_),
      pending_(std::move(other.pending_)) {}  // the strings stay where SQLite points

void Statement::Traced(int index, std::string value) {
  if (index < 1 || index > 999) return;
  if (traced_values_.size() < static_cast<size_t>(index)) traced_values_.resize(static_cast<size_t>(index));
  traced_values_[static_cast<size_t>(index) - 1] = std::move(value);
}

Statement& Statement::Bind(int index, int64_t value) {
  dirty_ = true;
  if (connection_->recorder() != nullptr) Traced(index, std::to_string(value));
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK) Fail(rc);
  return *this;
}

Statement& Statement::Bind(int index, std::string_view value) {
  dirty_ = true;
  if (connection_->recorder() != nullptr) Traced(index, std::string(value));
  int rc;
  if (value.data() != nullptr && index >= 1 && static_cast<size_t>(index) <= text_.size()) {
    // Our own copy, bound without a second one: SQLite's copy (SQLITE_TRANSIENT) would be a
    // malloc and free per bind. The copy stays put until rebound, reset or destroyed.
    std::string& copy = text_[static_cast<size_t>(index) - 1];
    copy.assign(value.data(), value.size());
    rc = sqlite3_bind_text(stmt_, index, copy.data(), static_cast<int>(copy.size()),
                           SQLITE_STATIC);
  } else {
    // A view with no data binds NULL, an index out of range fails: as SQLite decides.
    rc = sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()),
                           SQLITE_TRANSIENT);
  }
  if (rc != SQLITE_OK) Fail(rc);
  return *this;
}

Statement& Statement::BindUntilReset(int index, std::string_view value) {
  dirty_ = true;  // the reset clears the binding: nothing points at value afterwards
  if (connection_->recorder() != nullptr) Traced(index, std::string(value));
  int rc =
      sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_STATIC);
  if (rc != SQLITE_OK) Fail(rc);
  return *this;
}

Statement& Statement::BindNull(int index) {
  dirty_ = true;
  if (connection_->recorder() != nullptr) Traced(index, "NULL");
  int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK) Fail(rc);
  return *this;
}

namespace {

std::string Describe(int rc) {
  if (rc == SQLITE_ROW || rc == SQLITE_DONE) return rc == SQLITE_ROW ? "row" : "ok";
  if ((rc & 0xff) == SQLITE_CONSTRAINT) return "constraint " + std::to_string(rc);
  if ((rc & 0xff) == SQLITE_BUSY) return "busy " + std::to_string(rc);
  return "error " + std::to_string(rc);
}

// Says which of an INSERT's rows (e.rows, sqlite3_changes) went in and which updated a row.
void SplitInsert(TraceEvent& e, const Connection::RowWrites& before,
                 const Connection::RowWrites& after, bool may_update) {
  // sqlite3_changes counts an ON CONFLICT ... DO UPDATE's updated row as it counts an
  // inserted one: which each was, SQLite's preupdate hook saw, row by row.
  const int64_t inserted = after.inserted - before.inserted;
  const int64_t updated = after.updated - before.updated;
  // An INSERT's own deletes are the rows its OR REPLACE took the place of.
  e.replaced = after.deleted - before.deleted;
  if (Connection::SeesRowWrites() && inserted + updated == e.rows) {
    e.updated = updated;
    e.unchanged = after.unchanged - before.unchanged;
  } else if (may_update && e.rows > 0) {
    e.inserted_or_updated = true;  // no hook (or a count that does not add up): not known
  }
}

}  // namespace

int Statement::StepRaw() {
  Recorder* recorder = connection_->recorder();
  const bool first = !started_;
  started_ = true;
  dirty_ = true;
  if (first && connection_->gate() != nullptr) connection_->gate()->BeforeStatement(*connection_, sql());
  BusyStats before = connection_->busy();
  Connection::StepMark mark = connection_->StepStarting();
  const Connection::RowWrites written_before = connection_->RowsWritten();
  int rc = sqlite3_step(stmt_);
  connection_->StepEnded(mark);
  // Read the extended code now: a later reset or rollback would replace it.
  last_code_ = (rc == SQLITE_ROW || rc == SQLITE_DONE) ? 0 : sqlite3_extended_errcode(sqlite3_db_handle(stmt_));
  if (pending_ && !first) {
    if (rc == SQLITE_ROW) {
      ++pending_->rows;
      pending_->value.clear();  // a value is a read of one row
    } else {
      if (last_code_ != 0) {
        pending_->error = std::to_string(last_code_);
        pending_->result = Describe(last_code_);
      }
      RecordPending();
    }
  }
  if (recorder != nullptr && first) {
    BusyStats after = connection_->busy();
    TraceEvent e;
    // When the step ended (after any wait), or when it released the write lock if another
    // connection had taken it by then.
    e.at_us = connection_->StepEventStamp(recorder->MicrosSinceOrigin());
    connection_->Stamp(e);
    e.kind = "sql";
    e.op = op_;
    e.table = table_;
    e.detail = sql();
    e.result = Describe(last_code_ == 0 ? rc : last_code_);
    // A write that changed nothing (INSERT OR IGNORE on a taken key, an UPDATE that matched
    // no row) says so: "ok" alone would read as done.
    const bool write = op_ == "INSERT" || op_ == "UPDATE" || op_ == "DELETE";
    if (rc == SQLITE_DONE && write) {
      e.rows = sqlite3_changes(sqlite3_db_handle(stmt_));
      if (e.rows == 0) e.result = "ok: no row changed";
      const Connection::RowWrites written = connection_->RowsWritten();
      if (op_ == "INSERT") SplitInsert(e, written_before, written, may_update_);
      // An UPDATE's rows that kept every value, where the hook saw each of its rows.
      if (op_ == "UPDATE" && Connection::SeesRowWrites() &&
          written.updated - written_before.updated == e.rows) {
        e.unchanged = written.unchanged - written_before.unchanged;
      }
    } else if (rc == SQLITE_DONE && op_ == "SELECT") {
      e.rows = 0;
    }
    if (last_code_ != 0) e.error = std::to_string(last_code_);
    if (e.busy_calls = after.calls - before.calls; e.busy_calls > 0) e.waited_on = "the write lock";
    // The wait as the pictures draw it: from its wait event (the busy handler's first
    // call) to this event's stamp, one measurement for the figure and the bar (the busy
    // handler's own sum of pauses, BusyStats::waited, leaves out its tries and the
    // statement's work once the lock came).
    const int64_t wait_at = connection_->WaitStamp();
    e.waited_us = wait_at >= 0 ? std::max<int64_t>(0, e.at_us - wait_at)
                               : (after.waited - before.waited).count();
    for (size_t i = 0; i < traced_values_.size(); ++i) {
      std::string name = ParameterName(static_cast<int>(i) + 1);
      if (name.empty()) name = "?" + std::to_string(i + 1);
      e.values += (e.values.empty() ? "" : ", ") + name + "=" + traced_values_[i];
    }
    if (rc == SQLITE_ROW) {
      // Recorded once the execution ends, with every row it read.
      e.rows = 1;
      // A value is a read of one column, or of values the statement computed (counts): "1
      // row" would say nothing of what was counted. A stored row stays "1 row".
      const int columns = sqlite3_column_count(stmt_);
      bool computed = true;
      for (int i = 0; i < columns; ++i) {
        computed = computed && sqlite3_column_decltype(stmt_, i) == nullptr;
      }
      if (columns == 1 || computed) {
        for (int i = 0; i < columns; ++i) {
          const unsigned char* text = sqlite3_column_text(stmt_, i);
          e.value += fmt::format("{}{} = {}", i > 0 ? ", " : "", sqlite3_column_name(stmt_, i),
                                 text != nullptr ? reinterpret_cast<const char*>(text) : "NULL");
        }
      }
      pending_ = std::make_unique<TraceEvent>(std::move(e));
    } else {
      recorder->Record(std::move(e));
    }
  }
  return rc;
}

void Statement::RecordPending() noexcept {
  if (!pending_) return;
  std::unique_ptr<TraceEvent> e = std::move(pending_);
  try {
    if (Recorder* recorder = connection_->recorder()) recorder->Record(std::move(*e));
  } catch (...) {
    // Out of memory while recording: the trace misses one read, the run goes on.
  }
}

bool Statement::Step() {
  int rc = StepRaw();
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  Fail(rc);
}

void Statement::Execute() {
  while (Step()) {
  }
  Reset();
}

InsertResult Statement::ExecuteInsert() {
  int rc;
  while ((rc = StepRaw()) == SQLITE_ROW) {
  }
  if (rc == SQLITE_DONE) {
    Reset();
    return InsertResult::kInserted;
  }
  if (IsDuplicateKeyCode(last_code_)) {
    Reset();
    return InsertResult::kDuplicateKey;
  }
  Fail(rc);
}

void Statement::Reset() {
  RecordPending();
  if (!dirty_) return;  // already reset with no bindings: Cached() after Execute()
  dirty_ = false;
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  started_ = false;
}

int64_t Statement::ColumnInt(int index) const { return sqlite3_column_int64(stmt_, index); }

std::string Statement::ColumnText(int index) const {
  const unsigned char* text = sqlite3_column_text(stmt_, index);
  return text ? std::string(reinterpret_cast<const char*>(text)) : std::string();
}

bool Statement::ColumnIsNull(int index) const {
  return sqlite3_column_type(stmt_, index) == SQLITE_NULL;
}

bool Statement::ColumnIsInteger(int index) const {
  return sqlite3_column_type(stmt_, index) == SQLITE_INTEGER;
}

int Statement::ParameterCount() const { return sqlite3_bind_parameter_count(stmt_); }

std::string Statement::ParameterName(int index) const {
  const char* name = sqlite3_bind_parameter_name(stmt_, index);
  return name == nullptr ? std::string() : std::string(name);
}

std::string Statement::sql() const {
  const char* text = sqlite3_sql(stmt_);
  return text ? text : "";
}

void Statement::Fail(int rc) {
  sqlite3* db = sqlite3_db_handle(stmt_);
  int code = last_code_ != 0 ? last_code_ : sqlite3_extended_errcode(db);
  if (code == 0) code = rc;
  std::string message = sqlite3_errmsg(db);
  std::string text = sql();
  RecordPending();
  sqlite3_reset(stmt_);
  started_ = false;
  throw SqliteError(code, DescribeFailure(db, code,
                                          message + " (code " + std::to_string(code) +
                                              ") in: " + SqlForMessage(text)));
}

}  // namespace dedupsim
