// PostgreSQL's UntrustedSql (store/untrusted_sql.h): a file's statement in its PostgreSQL
// text, on the store's connection, which is the file's own role in the file's own database
// (postgres/file_databases.h): the server's privileges and the role's statement_timeout are the
// rules there. What the server stopped for the file's own doing (that timeout, a privilege
// the role lacks) is SqlStopped; everything else is the PgError it threw.
#include <fmt/format.h>

#include "postgres/error.h"
#include "postgres/store.h"
#include "store/sql_text.h"
#include "store/untrusted_sql.h"

namespace dedupsim {

namespace {

class PgUntrustedSql final : public UntrustedSql {
 public:
  explicit PgUntrustedSql(PgConnection& db) : db_(db) {}
  std::string_view dialect() const override { return "postgres"; }

  UntrustedAnswer Run(const UntrustedStatement& s) override {
    PgParams params;
    for (const SqlValue& v : s.values) {
      if (const int64_t* n = std::get_if<int64_t>(&v)) {
        params.emplace_back(std::to_string(*n));
      } else {
        params.emplace_back(std::get<std::string>(v));
      }
    }
    UntrustedAnswer answer;
    try {
      if (s.query) {
        PgResult r = db_.Exec(s.sql, params);
        answer.row = r.rows() > 0;
        if (answer.row) {
          if (std::optional<std::string> first = r.Get(0, 0)) answer.first = std::move(*first);
        }
        return answer;
      }
      if (s.duplicate_is_error) {
        db_.Exec(s.sql, params);  // a duplicate key is the PgError itself
      } else {
        answer.insert = db_.ExecInsert(s.sql, params);
      }
      if (answer.insert == InsertResult::kInserted) answer.changes = db_.changes();
      return answer;
    } catch (const PgError& e) {
      std::string what = e.what();
      if (size_t nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
      if (what.rfind("ERROR:  ", 0) == 0) what.erase(0, 8);
      if (e.sqlstate() == "57014" && what.find("statement timeout") != std::string::npos) {
        throw SqlStopped(fmt::format(
            "on PostgreSQL, the statement ran past its statement_timeout and was stopped: {}",
            SqlForMessage(s.sql)));
      }
      if (e.sqlstate() == "42501") {  // insufficient_privilege: outside what the file may do
        throw SqlStopped(fmt::format("refused when it ran on PostgreSQL: {} (in: {})", what,
                                     SqlForMessage(s.sql)));
      }
      throw;
    }
  }

  void SetUpTables(const char*, const std::vector<std::string>&, const char*) override {
    throw DatabaseError(
        "on PostgreSQL a consumer file's tables are made by its grading set-up, in its own "
        "database (postgres/file_databases.h), not on a run's store");
  }

 private:
  PgConnection& db_;
};

}  // namespace

UntrustedSql& PgStore::untrusted() {
  if (!untrusted_) untrusted_ = std::make_shared<PgUntrustedSql>(db_);
  return *untrusted_;
}

}  // namespace dedupsim
