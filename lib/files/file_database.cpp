#include "files/file_database.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace dedupsim::files {

namespace {

// SQL for a one-line message: on one line, cut to 160 characters (not store/sql_text.h's
// SqlForMessage, which drops comments and runs of spaces: these messages kept their form).
std::string CutForMessage(const std::string& sql) {
  std::string out;
  for (char ch : sql) out += (ch == '\n' || ch == '\r' || ch == '\t') ? ' ' : ch;
  if (out.size() > 160) out = out.substr(0, 160) + "...";
  return out;
}

}  // namespace

std::unique_ptr<FileDatabase> SetUpFileDatabase(const FileDatabases& server, ConsumerFile& file) {
  for (const Step& s : file.steps) {
    if (s.on_second_store || s.idempotency_key) {
      throw ErrorAt(s.at,
                    "this step needs a second store (the cache, or the email provider that "
                    "honours an idempotency key), which check keeps in a SQLite file only: "
                    "grade this file without --backend postgres");
    }
  }
  FileSql sql;
  sql.schema = file.schema;
  std::vector<Step*> statements;  // sql.statements' steps
  for (Step& s : file.steps) {
    if (s.kind != Step::Kind::kSql) continue;
    sql.statements.push_back(s.pg_sql);
    statements.push_back(&s);
  }
  try {
    return server.Create(sql, [&](size_t i, bool returns_rows) {
      Step& s = *statements[i];
      s.pg_query = returns_rows;
      if (s.pg_query != s.query) {
        throw ErrorAt(s.pg_sql_at,
                      fmt::format("the PostgreSQL text {} rows where the SQLite one {} (in: {})",
                                  s.pg_query ? "returns" : "returns no",
                                  s.query ? "does" : "does not", CutForMessage(s.pg_sql)));
      }
    });
  } catch (const FileSqlRefused& e) {
    if (e.statement() == FileSqlRefused::kSchema) {
      const bool not_taken = e.fault() == FileSqlRefused::Fault::kNotTaken;  // the text shown
      throw ErrorAt(file.schema_at, not_taken ? fmt::format("schema: {} (in: {})", e.what(),
                                                            CutForMessage(file.schema))
                                              : fmt::format("schema: {}", e.what()));
    }
    const Step& s = *statements[e.statement()];
    throw ErrorAt(s.pg_sql_at,
                  fmt::format("{} (a step runs one SELECT, INSERT, UPDATE, DELETE or MERGE; give "
                              "its PostgreSQL text with sql = {{ sqlite = \"...\", postgres = "
                              "\"...\" }}) (in: {})",
                              e.what(), CutForMessage(s.pg_sql)));
  }
}

}  // namespace dedupsim::files
