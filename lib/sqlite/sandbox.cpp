#include "sqlite/sandbox.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <set>
#include <stdexcept>

#include "os/pause_point.h"
#include "store/sql_text.h"
#include "sqlite/database.h"
#include "sqlite/error.h"
#include "sqlite/side_records.h"
#include "sqlite/statement.h"
#include "sqlite/store.h"

namespace dedupsim {

namespace {

// The functions a file's SQL may call: SQLite's core scalar, aggregate and window
// functions, the date and time, math and JSON functions. Not: load_extension,
// fts3_tokenizer (a memory-corruption primitive in Debian's build), the full-text, R-tree
// and compile-option functions, or anything a later library adds.
constexpr std::array kAllowedFunctions = {
    // core scalar
    "abs", "changes", "char", "coalesce", "format", "glob", "hex", "ifnull", "iif", "instr",
    "last_insert_rowid", "length", "like", "likelihood", "likely", "lower", "ltrim", "max",
    "min", "nullif", "printf", "quote", "random", "randomblob", "replace", "round", "rtrim",
    "sign", "substr", "substring", "total_changes", "trim", "typeof", "unicode", "unlikely",
    "upper", "zeroblob",
    // aggregate
    "avg", "count", "group_concat", "sum", "total",
    // window
    "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead",
    "first_value", "last_value", "nth_value",
    // date and time
    "date", "time", "datetime", "julianday", "unixepoch", "strftime", "current_date",
    "current_time", "current_timestamp",
    // math
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "ceiling", "cos", "cosh",
    "degrees", "exp", "floor", "ln", "log", "log10", "log2", "mod", "pi", "pow", "power",
    "radians", "sin", "sinh", "sqrt", "tan", "tanh", "trunc",
    // JSON (-> and ->> are functions to the authorizer)
    "json", "json_array", "json_array_length", "json_extract", "json_insert", "json_object",
    "json_patch", "json_quote", "json_remove", "json_replace", "json_set", "json_type",
    "json_valid", "json_group_array", "json_group_object", "->", "->>"};

// Table-valued functions a statement may read like tables.
constexpr std::array kAllowedTableFunctions = {"json_each", "json_tree"};

// The limits a file's statement runs under (SQLite's defaults are far larger).
struct Limit {
  int id;
  int value;
};
constexpr std::array kLimits = {
    Limit{SQLITE_LIMIT_LENGTH, 100000},           // a string or blob: 100 KB
    Limit{SQLITE_LIMIT_SQL_LENGTH, 100000},       // a statement: 100 KB
    Limit{SQLITE_LIMIT_COLUMN, 100},              // columns of a table, index, result
    Limit{SQLITE_LIMIT_EXPR_DEPTH, 100},          // an expression's nesting
    Limit{SQLITE_LIMIT_COMPOUND_SELECT, 10},      // SELECTs joined by UNION and the like
    Limit{SQLITE_LIMIT_VDBE_OP, 100000},          // a statement's program
    Limit{SQLITE_LIMIT_FUNCTION_ARG, 32},         // a function's arguments
    Limit{SQLITE_LIMIT_ATTACHED, 0},              // no other database
    Limit{SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 1000},
    Limit{SQLITE_LIMIT_VARIABLE_NUMBER, 32},      // parameters
    Limit{SQLITE_LIMIT_TRIGGER_DEPTH, 1},
    Limit{SQLITE_LIMIT_WORKER_THREADS, 0},
};

// The progress handler's period, in virtual-machine instructions: a few microseconds.
constexpr int kProgressPeriod = 1000;

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool Contains(const std::vector<std::string>& lower_names, std::string_view name) {
  const std::string l = AsciiLower(name);
  return std::find(lower_names.begin(), lower_names.end(), l) != lower_names.end();
}

bool ContainsLower(const std::vector<std::string>& names, std::string_view name) {
  const std::string l = AsciiLower(name);
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& n) { return AsciiLower(n) == l; });
}

bool IsSchemaTable(std::string_view table) {
  const std::string l = AsciiLower(table);
  return l == "sqlite_master" || l == "sqlite_schema";
}

int64_t ThreadCpuNs() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

// Pages this connection's cache has written to disk so far (a spill, a commit).
int PagesWritten(sqlite3* db) {
  int current = 0, highest = 0;
  sqlite3_db_status(db, SQLITE_DBSTATUS_CACHE_WRITE, &current, &highest, 0);
  return current;
}

const char* Rule(SqlUse use) {
  switch (use) {
    case SqlUse::kSchema:
      return "a schema only creates tables, and indexes on the tables it creates (CREATE TABLE, "
             "CREATE INDEX)";
    case SqlUse::kStep:
      return "a sql step reads or writes rows of the run's tables (SELECT, INSERT, UPDATE, "
             "DELETE, REPLACE)";
    case SqlUse::kFigure:
      return "a figure only reads rows of the run's tables (SELECT)";
  }
  return "";
}

// What an action does, for "X is not allowed: RULE".
std::string ActionName(int action, const char* a1, const char* a2) {
  auto name = [](const char* s) { return std::string(s != nullptr ? s : ""); };
  switch (action) {
    case SQLITE_ATTACH:
      return "ATTACH (another database file)";
    case SQLITE_DETACH:
      return "DETACH";
    case SQLITE_PRAGMA:
      return fmt::format("PRAGMA {}", name(a1));
    case SQLITE_TRANSACTION:
    case SQLITE_SAVEPOINT:
      return fmt::format("{} (a transaction: write begin, commit and rollback steps)",
                         action == SQLITE_SAVEPOINT ? "SAVEPOINT" : name(a1));
    case SQLITE_CREATE_TRIGGER:
    case SQLITE_CREATE_TEMP_TRIGGER:
      return fmt::format("a trigger ({} on {})", name(a1), name(a2));
    case SQLITE_CREATE_VIEW:
    case SQLITE_CREATE_TEMP_VIEW:
      return fmt::format("a view ({})", name(a1));
    case SQLITE_CREATE_TEMP_TABLE:
      return fmt::format("a temporary table ({})", name(a1));
    case SQLITE_CREATE_TEMP_INDEX:
      return fmt::format("a temporary index ({})", name(a1));
    case SQLITE_CREATE_VTABLE:
      return fmt::format("a virtual table ({} using {})", name(a1), name(a2));
    case SQLITE_DROP_TABLE:
    case SQLITE_DROP_TEMP_TABLE:
      return fmt::format("DROP TABLE {}", name(a1));
    case SQLITE_DROP_INDEX:
    case SQLITE_DROP_TEMP_INDEX:
      return fmt::format("DROP INDEX {}", name(a1));
    case SQLITE_DROP_TRIGGER:
    case SQLITE_DROP_TEMP_TRIGGER:
      return fmt::format("DROP TRIGGER {}", name(a1));
    case SQLITE_DROP_VIEW:
    case SQLITE_DROP_TEMP_VIEW:
      return fmt::format("DROP VIEW {}", name(a1));
    case SQLITE_DROP_VTABLE:
      return fmt::format("DROP TABLE {} (virtual)", name(a1));
    case SQLITE_ALTER_TABLE:
      return fmt::format("ALTER TABLE {}", name(a2));
    case SQLITE_REINDEX:
      return fmt::format("REINDEX {}", name(a1));
    case SQLITE_ANALYZE:
      return fmt::format("ANALYZE {}", name(a1));
    default:
      return fmt::format("this statement (SQLite's action {})", action);
  }
}

// Reads the names of the real tables of db's main schema (no sqlite_ table, no virtual one).
std::vector<std::string> TablesOf(Connection& db) {
  std::vector<std::string> names;
  Statement q = db.Prepare(
      "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' "
      "ESCAPE '\\' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name");
  while (q.Step()) names.push_back(q.ColumnText(0));
  return names;
}

struct StmtDeleter {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtDeleter>;

// Where a refusal points: the name it is about, written in the statement (outside comments
// and string literals), else the statement's first token.
size_t PointAt(std::string_view text, size_t begin, size_t end, const std::string& name) {
  const size_t first = SkipSpaceAndComments(text, begin);
  if (name.empty()) return first;
  const std::string want = AsciiLower(name);
  size_t i = first;
  while (i < end) {
    const size_t next = SkipSpaceAndComments(text, i);
    if (next != i) {
      i = next;
      continue;
    }
    const char c = text[i];
    if (c == '\'') {  // a string literal: not a name
      size_t j = i + 1;
      while (j < end && !(text[j] == '\'' && (j + 1 >= end || text[j + 1] != '\''))) {
        j += text[j] == '\'' ? size_t{2} : size_t{1};
      }
      i = j + 1;
      continue;
    }
    if (c == '"' || c == '`' || c == '[') {
      const char close = c == '[' ? ']' : c;
      const size_t j = text.find(close, i + 1);
      if (j == std::string_view::npos) break;
      if (AsciiLower(text.substr(i + 1, j - i - 1)) == want) return i;
      i = j + 1;
      continue;
    }
    const auto word_char = [](char ch) {
      return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '_' || ch == '$' || (static_cast<unsigned char>(ch) & 0x80) != 0;
    };
    if (word_char(c)) {
      size_t j = i;
      while (j < end && word_char(text[j])) ++j;
      if (AsciiLower(text.substr(i, j - i)) == want) return i;
      i = j;
      continue;
    }
    if (want == "->" || want == "->>") {
      if (text.compare(i, want.size(), want) == 0 &&
          (want == "->>" || text.compare(i, 3, "->>") != 0)) {
        return i;
      }
    }
    ++i;
  }
  return first;
}

// Where the statement that starts at start ends, by SQLite's own reading of a complete
// statement (sqlite3_complete: a trigger's inner ';' do not end it), for messages after a
// failed prepare, whose tail says only where the parser stopped. The rest of the text when
// no ';' within the first 64 completes it.
size_t StatementEnd(std::string_view text, size_t start) {
  size_t pos = start;
  for (int tries = 0; tries < 64; ++tries) {
    pos = text.find(';', pos);
    if (pos == std::string_view::npos) break;
    ++pos;
    if (sqlite3_complete(std::string(text.substr(start, pos - start)).c_str()) != 0) return pos;
  }
  return text.size();
}

// Prepares the next statement of text under scope's rules; stmt is null when only
// whitespace, comments and ';' remain. Throws SqlRefused for a refusal or a syntax error.
StmtPtr PrepareNext(Connection& db, const SandboxScope::Guard& guard, std::string_view text,
                    size_t from, size_t* begin, size_t* end) {
  sqlite3* h = db.handle();
  size_t start = from;
  for (;;) {
    start = SkipSpaceAndComments(text, start);
    if (start < text.size() && text[start] == ';') {
      ++start;
      continue;
    }
    break;
  }
  *begin = start;
  if (start >= text.size()) return nullptr;
  sqlite3_stmt* raw = nullptr;
  const char* tail = nullptr;
  const std::string_view rest = text.substr(start);
  // SQLite reads at most the bytes given; text need not end in a NUL.
  if (rest.size() > static_cast<size_t>(INT32_MAX)) {
    throw SqlRefused("the SQL is too long", start, SqlForMessage(rest));
  }
  const int rc = sqlite3_prepare_v3(h, rest.data(), static_cast<int>(rest.size()), 0, &raw, &tail);
  StmtPtr stmt(raw);
  const size_t stop = tail != nullptr ? start + static_cast<size_t>(tail - rest.data()) : text.size();
  *end = std::max(stop, start);
  if (rc != SQLITE_OK) {
    const size_t statement_end = StatementEnd(text, start);
    const std::string shown = SqlForMessage(text.substr(start, statement_end - start));
    if (!guard.refusal.empty()) {
      throw SqlRefused(guard.refusal,
                       PointAt(text, start, std::min(text.size(), statement_end), guard.refused_name),
                       shown);
    }
    const int offset = sqlite3_error_offset(h);
    const size_t at = offset >= 0 ? std::min(start + static_cast<size_t>(offset), text.size())
                                  : SkipSpaceAndComments(text, start);
    throw SqlRefused(fmt::format("SQL does not prepare: {}", sqlite3_errmsg(h)), at, shown);
  }
  return stmt;
}

// The statement's kind from what the authorizer saw, against its use; throws when it is
// not the kind its use calls for.
//
// inert_schema: a schema statement that reported no action while it was prepared is let
// through, to be stepped under the guard: CREATE INDEX IF NOT EXISTS on an index that
// exists (a kept database) reports nothing and does nothing; VACUUM reports nothing until
// it runs, and then its ATTACH is refused.
void CheckKind(const SqlRules& rules, const SandboxScope::Guard& guard, sqlite3_stmt* stmt,
               std::string_view text, size_t begin, size_t end, bool inert_schema = false) {
  auto refuse = [&](const std::string& what) {
    throw SqlRefused(fmt::format("{} is not allowed: {}", what, Rule(rules.use)),
                     SkipSpaceAndComments(text, begin),
                     SqlForMessage(text.substr(begin, end - begin)));
  };
  if (sqlite3_stmt_isexplain(stmt) != 0) refuse("EXPLAIN");
  switch (rules.use) {
    case SqlUse::kSchema:
      if (!guard.creates && !(inert_schema && guard.actions == 0)) {
        refuse("a statement that creates neither a table nor an index");
      }
      break;
    case SqlUse::kStep:
      if (!guard.selects && !guard.writes) {
        refuse("a statement that neither reads nor writes rows");
      }
      break;
    case SqlUse::kFigure:
      if (!guard.selects || sqlite3_stmt_readonly(stmt) == 0 || sqlite3_column_count(stmt) == 0) {
        refuse("a statement that does not only read rows");
      }
      break;
  }
}

}  // namespace

void SandboxScope::Guard::Deny(std::string reason, const char* name) {
  if (!refusal.empty()) return;
  refusal = std::move(reason);
  refused_name = name != nullptr ? name : "";
}

int SandboxScope::Guard::Authorize(int action, const char* a1, const char* a2,
                                   const char* database, const char* /*inner*/) {
  const SqlRules& r = *rules;
  ++actions;
  const bool main = database != nullptr && std::string_view(database) == "main";
  auto deny = [&](const std::string& what, const char* name) {
    Deny(fmt::format("{} is not allowed: {}", what, Rule(r.use)), name);
    return SQLITE_DENY;
  };
  // A table this statement may read (and, for a step, write).
  auto known_table = [&](const char* table) {
    if (table == nullptr || !main) return false;
    if (r.use == SqlUse::kSchema) {
      return Contains(created, table) || ContainsLower(r.tables, table) ||
             ContainsLower(r.reserved, table);
    }
    return ContainsLower(r.tables, table);
  };
  auto not_a_table = [&](const char* table) {
    return deny(fmt::format("table {}{} (not one of the run's tables)", table ? table : "?",
                            main || database == nullptr
                                ? ""
                                : fmt::format(" of database {}", database)),
                table);
  };
  if (database != nullptr && std::string_view(database) == "temp") {
    return deny("the temporary schema (TEMP tables, indexes, views, triggers)", nullptr);
  }
  switch (action) {
    case SQLITE_SELECT:
      selects = true;
      return SQLITE_OK;
    case SQLITE_RECURSIVE:
      return SQLITE_OK;
    case SQLITE_FUNCTION: {
      const std::string name = AsciiLower(a2 != nullptr ? a2 : "");
      if (std::find(kAllowedFunctions.begin(), kAllowedFunctions.end(), name) !=
          kAllowedFunctions.end()) {
        return SQLITE_OK;
      }
      Deny(fmt::format("function {} is not allowed: a file's SQL calls SQLite's core, date, "
                       "math and JSON functions only (docs/reliability.md)",
                       a2 != nullptr ? a2 : "?"),
           a2);
      return SQLITE_DENY;
    }
    case SQLITE_READ: {
      if (database == nullptr && a1 != nullptr && a2 != nullptr && *a2 == '\0') {
        // A FROM term none of whose columns is read (count(*)), with its schema as written:
        // none. A table of the run, or the statement's own rows (a WITH table); a name of
        // SQLite's own is refused.
        const std::string name = AsciiLower(a1);
        if (name.rfind("sqlite_", 0) == 0 || name.rfind("pragma_", 0) == 0) return not_a_table(a1);
        if (ContainsLower(r.tables, name) && !Contains(touched, name)) touched.push_back(name);
        return SQLITE_OK;
      }
      if (a1 != nullptr && main && IsSchemaTable(a1) &&
          (r.use == SqlUse::kSchema || AsciiLower(a2 != nullptr ? a2 : "") == "rowid")) {
        // CREATE reads the schema table it adds to; SQLite reads a row's id there itself when
        // it first sets up a table-valued function (json_each) on a connection.
        return SQLITE_OK;
      }
      if (a1 != nullptr && main &&
          std::find(kAllowedTableFunctions.begin(), kAllowedTableFunctions.end(), AsciiLower(a1)) !=
              kAllowedTableFunctions.end()) {
        if (!Contains(touched, a1)) touched.push_back(AsciiLower(a1));
        return SQLITE_OK;
      }
      if (!known_table(a1)) return not_a_table(a1);
      if (!Contains(touched, a1)) touched.push_back(AsciiLower(a1));
      return SQLITE_OK;
    }
    case SQLITE_INSERT:
    case SQLITE_UPDATE:
    case SQLITE_DELETE: {
      const char* verb = action == SQLITE_INSERT   ? "INSERT INTO"
                         : action == SQLITE_UPDATE ? "UPDATE"
                                                   : "DELETE FROM";
      if (a1 != nullptr && IsSchemaTable(a1)) {
        // CREATE TABLE and CREATE INDEX add their row to the schema table; SQLite sets rows
        // there itself (a CREATE, a table-valued function's set-up). No statement of a file
        // writes it: DEFENSIVE refuses that before the authorizer is asked.
        if (main && action == SQLITE_UPDATE) return SQLITE_OK;
        if (main && action == SQLITE_INSERT && r.use == SqlUse::kSchema) return SQLITE_OK;
        return deny(action == SQLITE_DELETE ? "DROP (removing a table, index, view or trigger)"
                                            : "a change to the schema (CREATE, ALTER)",
                    nullptr);
      }
      if (r.use == SqlUse::kSchema) return deny(fmt::format("{} {}", verb, a1 ? a1 : "?"), a1);
      if (r.use == SqlUse::kFigure) return deny(fmt::format("{} {}", verb, a1 ? a1 : "?"), a1);
      if (!known_table(a1)) return not_a_table(a1);
      if (!Contains(touched, a1)) touched.push_back(AsciiLower(a1));
      writes = true;
      return SQLITE_OK;
    }
    case SQLITE_CREATE_TABLE: {
      if (r.use != SqlUse::kSchema || !main) return deny(fmt::format("CREATE TABLE {}", a1 ? a1 : "?"), a1);
      const std::string name = AsciiLower(a1 != nullptr ? a1 : "");
      if (name == "sqlite_sequence") return SQLITE_OK;  // AUTOINCREMENT's own table
      if (ContainsLower(r.reserved, name) && !ContainsLower(r.tables, name)) {
        Deny(fmt::format("CREATE TABLE {} is not allowed: {} is a table of the run (dedupsim's, "
                         "or another consumer's); {}",
                         a1, a1, Rule(r.use)),
             a1);
        return SQLITE_DENY;
      }
      if (!Contains(created, name)) created.push_back(name);
      creates = true;
      return SQLITE_OK;
    }
    case SQLITE_CREATE_INDEX: {
      if (r.use != SqlUse::kSchema || !main) {
        return deny(fmt::format("CREATE INDEX {}", a1 ? a1 : "?"), a1);
      }
      const char* table = a2;
      const bool own = table != nullptr &&
                       (Contains(created, table) || ContainsLower(r.tables, table));
      if (!own) {
        Deny(fmt::format("an index on {} is not allowed: {} is not a table this schema creates; {}",
                         table ? table : "?", table ? table : "?", Rule(r.use)),
             table);
        return SQLITE_DENY;
      }
      indexes.push_back(AsciiLower(a1 != nullptr ? a1 : ""));
      creates = true;
      return SQLITE_OK;
    }
    case SQLITE_REINDEX:
      // CREATE INDEX fills the index it creates; any other REINDEX is refused.
      if (r.use == SqlUse::kSchema && main && a1 != nullptr && Contains(indexes, a1)) {
        return SQLITE_OK;
      }
      return deny(ActionName(action, a1, a2), a1);
    default:
      return deny(ActionName(action, a1, a2), nullptr);
  }
}

SandboxScope::SandboxScope(Connection& db, const SqlRules& rules) : db_(db) {
  if (db.guard() != nullptr) throw std::logic_error("a sandbox scope inside another");
  sqlite3* h = db.handle();
  guard_.rules = &rules;
  // Never turned off again: dedupsim itself needs neither writable_schema nor the tokenizer.
  sqlite3_db_config(h, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(h, SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, 0, nullptr);
  sqlite3_db_config(h, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, nullptr);
  for (const Limit& l : kLimits) saved_limits_.emplace_back(l.id, sqlite3_limit(h, l.id, l.value));
  db.SetGuard(&guard_);
  guard_.cpu_budget_ns = std::chrono::nanoseconds(rules.budget).count();
  guard_.cpu_start_ns = ThreadCpuNs();
  guard_.db = h;
  guard_.pages_written_start = PagesWritten(h);
  sqlite3_progress_handler(
      h, kProgressPeriod,
      [](void* arg) -> int {
        auto* g = static_cast<Guard*>(arg);
        if (ThreadCpuNs() - g->cpu_start_ns <= g->cpu_budget_ns &&
            PagesWritten(g->db) - g->pages_written_start <= kStatementPagesWritten) {
          return 0;
        }
        g->over_budget = true;
        return 1;  // SQLITE_INTERRUPT
      },
      &guard_);
}

SandboxScope::~SandboxScope() {
  db_.SetGuard(nullptr);
  if (!db_.is_open()) return;  // closed inside the scope (a crash): nothing left to restore
  sqlite3* h = db_.handle();
  sqlite3_progress_handler(h, 0, nullptr, nullptr);
  for (const auto& [id, value] : saved_limits_) sqlite3_limit(h, id, value);
}

std::string SandboxScope::BudgetMessage() const {
  if (PagesWritten(guard_.db) - guard_.pages_written_start > kStatementPagesWritten) {
    return fmt::format(
        "this statement wrote more than its budget of {} database pages (10 MB) and was "
        "stopped (an endless recursive WITH, or far more rows than a lesson needs?)",
        kStatementPagesWritten);
  }
  return fmt::format(
      "this statement ran past its budget of {} ms of CPU time and was stopped (an endless "
      "recursive WITH, or far more rows than a lesson needs?)",
      std::chrono::milliseconds(guard_.rules->budget).count());
}

std::optional<CheckedSql> CheckNextStatement(Connection& db, std::string_view text, size_t from,
                                             SqlUse use) {
  SqlRules rules{use, TablesOf(db), {}, StatementBudget()};
  SandboxScope scope(db, rules);
  size_t begin = 0, end = 0;
  StmtPtr stmt = PrepareNext(db, scope.guard(), text, from, &begin, &end);
  if (!stmt) return std::nullopt;
  CheckKind(rules, scope.guard(), stmt.get(), text, begin, end);
  CheckedSql out;
  out.begin = SkipSpaceAndComments(text, begin);
  out.end = end;
  out.query = sqlite3_column_count(stmt.get()) > 0;
  out.read_only = sqlite3_stmt_readonly(stmt.get()) != 0;
  for (int i = 1; i <= sqlite3_bind_parameter_count(stmt.get()); ++i) {
    const char* name = sqlite3_bind_parameter_name(stmt.get(), i);
    out.parameters.emplace_back(name != nullptr ? name : "?");
  }
  out.rules.use = use;
  out.rules.tables = scope.guard().touched;
  return out;
}

CheckedSql CheckOneStatement(Connection& db, std::string_view text, SqlUse use) {
  std::optional<CheckedSql> one = CheckNextStatement(db, text, 0, use);
  if (!one) {
    throw SqlRefused(fmt::format("no statement, only whitespace and comments: {}", Rule(use)),
                     SkipSpaceAndComments(text, 0) == text.size() ? 0 : text.size(),
                     SqlForMessage(text));
  }
  // What follows must hold no statement: only whitespace, comments and ';'.
  size_t after = one->end;
  for (;;) {
    after = SkipSpaceAndComments(text, after);
    if (after < text.size() && text[after] == ';') {
      ++after;
      continue;
    }
    break;
  }
  if (after < text.size()) {
    throw SqlRefused("one statement only; another one starts here", after,
                     SqlForMessage(text.substr(after)));
  }
  return *one;
}

std::vector<std::string> RunSchema(Connection& db, std::string_view text,
                                   const std::vector<std::string>& own_tables) {
  const std::vector<std::string> before = TablesOf(db);
  SqlRules rules{SqlUse::kSchema, own_tables, {}, StatementBudget()};
  for (const std::string& t : before) {
    if (!ContainsLower(own_tables, t)) rules.reserved.push_back(t);
  }
  size_t from = 0;
  for (;;) {
    SandboxScope scope(db, rules);
    size_t begin = 0, end = 0;
    StmtPtr stmt = PrepareNext(db, scope.guard(), text, from, &begin, &end);
    if (!stmt) break;
    CheckKind(rules, scope.guard(), stmt.get(), text, begin, end, /*inert_schema=*/true);
    const int rc = sqlite3_step(stmt.get());
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
      const std::string shown = SqlForMessage(text.substr(begin, end - begin));
      const size_t at = SkipSpaceAndComments(text, begin);
      if (scope.over_budget()) throw SqlRefused(scope.BudgetMessage(), at, shown);
      if (!scope.refusal().empty()) {
        throw SqlRefused(scope.refusal(), PointAt(text, begin, end, scope.refused_name()), shown);
      }
      throw SqlRefused(fmt::format("schema statement failed: {}", sqlite3_errmsg(db.handle())),
                       at, shown);
    }
    for (const std::string& t : scope.guard().created) {
      if (!ContainsLower(rules.tables, t)) rules.tables.push_back(t);
    }
    from = end;
  }
  std::vector<std::string> created;
  for (const std::string& t : TablesOf(db)) {
    if (std::find(before.begin(), before.end(), t) == before.end()) created.push_back(t);
  }
  return created;
}

UntrustedAnswer RunUntrusted(Connection& db, const UntrustedStatement& s) {
  if (s.rules == nullptr) throw std::logic_error("a file's statement ran on SQLite without its rules");
  SandboxScope scope(db, *s.rules);
  try {
    Statement& st = db.Cached(s.sql);
    for (size_t i = 0; i < s.values.size(); ++i) {
      const int index = static_cast<int>(i) + 1;
      if (const int64_t* n = std::get_if<int64_t>(&s.values[i])) {
        st.Bind(index, *n);
      } else {
        st.Bind(index, std::get<std::string>(s.values[i]));
      }
    }
    UntrustedAnswer answer;
    if (s.query) {
      answer.row = st.Step();
      if (answer.row && !st.ColumnIsNull(0)) {
        answer.first = st.ColumnIsInteger(0) ? SqlValue(st.ColumnInt(0)) : SqlValue(st.ColumnText(0));
      }
      st.Reset();  // a statement left mid-read would keep its read transaction open
      return answer;
    }
    if (s.duplicate_is_error) {
      st.Execute();  // a duplicate key is the SqliteError itself
    } else {
      answer.insert = st.ExecuteInsert();
    }
    if (answer.insert == InsertResult::kInserted) answer.changes = db.Changes();
    return answer;
  } catch (const SqliteError&) {
    if (scope.over_budget()) throw SqlStopped(scope.BudgetMessage());
    if (!scope.refusal().empty()) {
      throw SqlStopped(fmt::format("refused when it ran: {}", scope.refusal()));
    }
    throw;
  }
}

UntrustedSql& SqliteStore::untrusted() {
  if (!untrusted_) untrusted_ = std::make_shared<SqliteUntrustedSql>(*db_);
  return *untrusted_;
}

UntrustedSql& SqliteSideRecords::untrusted() {
  if (!untrusted_) untrusted_ = std::make_shared<SqliteUntrustedSql>(*connection_);
  return *untrusted_;
}

namespace {

// SQLite's check: a scratch database in a temporary file of its own (the service's tables)
// or in memory (a side store's), on which nothing of a file runs but its schema.
class SqliteChecker final : public UntrustedSqlChecker {
 public:
  explicit SqliteChecker(SideStoreKind tables) {
    if (tables == SideStoreKind::kNone) {
      file_.emplace(DatabaseFile::CreateTemporary(DatabaseSettings{
          JournalMode::kWal, Synchronous::kOff, std::chrono::milliseconds(1000)}));
      db_.emplace(file_->Connect());
    } else {
      db_.emplace("", ConnectionOptions{.create = true, .in_memory = true});
      db_->ExecScript(SideStoreTables(tables));
    }
  }
  std::vector<std::string> RunSchema(std::string_view text,
                                     const std::vector<std::string>& own_tables) override {
    return dedupsim::RunSchema(*db_, text, own_tables);
  }
  CheckedSql CheckOne(std::string_view text, SqlUse use) override {
    return CheckOneStatement(*db_, text, use);
  }

 private:
  std::optional<DatabaseFile> file_;  // before db_: closed after it
  std::optional<Connection> db_;
};

}  // namespace

std::unique_ptr<UntrustedSqlChecker> UntrustedSqlChecker::NewScratch(SideStoreKind tables) {
  return std::make_unique<SqliteChecker>(tables);
}

}  // namespace dedupsim
