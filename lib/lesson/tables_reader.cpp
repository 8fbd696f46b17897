#include "lesson/tables_reader.h"

#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "postgres/store.h"
#include "sqlite/side_store.h"

namespace dedupsim {

namespace {

std::string QuoteIdent(const std::string& name) {
  std::string out = "\"";
  for (char c : name) {
    out += c;
    if (c == '"') out += '"';
  }
  return out + "\"";
}

class PgTablesReader final : public TablesReader {
 public:
  PgTablesReader(const PgDatabase& db, const std::string& sqlite_path)
      : db_(db),
        side_({{"cache", sqlite_path + kDedupCacheSuffix},
               {"email provider", sqlite_path + kEmailProviderSuffix}}) {}

  TablesSnapshot Read(const TraceEvent& after) override {
    TablesSnapshot snap;
    try {
      ReadServer(snap);
    } catch (const std::exception& e) {
      snap.tables.clear();
      snap.unreadable = std::string("database: ") + e.what();
      connection_.reset();  // a broken session is opened anew at the next read
    }
    // The side stores after the server's tables, as TableProbe lists them after its file's.
    TablesSnapshot side = side_.Read(after);
    if (snap.unreadable.empty()) {
      snap.unreadable = side.unreadable;
      if (side.unreadable.empty()) {
        for (TableState& t : side.tables) snap.tables.push_back(std::move(t));
      } else {
        snap.tables.clear();
      }
    }
    snap.seq = after.seq;
    snap.at_us = after.at_us;
    snap.pid = after.pid;
    snap.kind = after.kind;
    snap.instance = after.instance;
    snap.detail = after.detail;
    return snap;
  }

 private:
  void ReadServer(TablesSnapshot& snap) {
    if (!connection_) {
      connection_ = std::make_unique<PgConnection>(db_.Connect());
      connection_->Exec("SET statement_timeout = 2000");
    }
    PgConnection& c = *connection_;
    c.Exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    try {
      // The schema's tables in the order they were created, as SQLite lists them by rowid.
      PgResult tables = c.Exec(
          "SELECT c.oid::text, c.relname FROM pg_class c JOIN pg_namespace n "
          "ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r' ORDER BY c.oid",
          {db_.schema()});
      for (int t = 0; t < tables.rows(); ++t) {
        const std::string oid = tables.Text(t, 0);
        const std::string relname = tables.Text(t, 1);
        TableState table;
        table.store = "database";
        table.name = SchemaSpelling(relname);
        PgResult columns = c.Exec(
            "SELECT attname, attnum::text FROM pg_attribute WHERE attrelid = $1::oid "
            "AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
            {oid});
        std::vector<std::string> attnums;
        for (int i = 0; i < columns.rows(); ++i) {
          table.columns.push_back(SchemaSpelling(columns.Text(i, 0)));
          attnums.push_back(columns.Text(i, 1));
        }
        PgResult key = c.Exec(
            "SELECT k.attnum::text FROM pg_index i, unnest(i.indkey) WITH ORDINALITY "
            "AS k(attnum, ord) WHERE i.indrelid = $1::oid AND i.indisprimary ORDER BY k.ord",
            {oid});
        std::string order_by;
        for (int i = 0; i < key.rows(); ++i) {
          for (size_t col = 0; col < attnums.size(); ++col) {
            if (attnums[col] != key.Text(i, 0)) continue;
            table.key.push_back(col);
            order_by += (order_by.empty() ? " ORDER BY " : ", ") + QuoteIdent(columns.Text(static_cast<int>(col), 0));
          }
        }
        const std::string qualified = QuoteIdent(db_.schema()) + "." + QuoteIdent(relname);
        PgResult rows = c.Exec("SELECT * FROM " + qualified + order_by + " LIMIT " +
                               std::to_string(TableProbe::kMaxRows));
        for (int r = 0; r < rows.rows(); ++r) {
          std::vector<std::string> row;
          for (size_t col = 0; col < table.columns.size(); ++col) {
            row.push_back(rows.Get(r, static_cast<int>(col)).value_or("NULL"));
          }
          table.rows.push_back(std::move(row));
        }
        table.total_rows = c.Exec("SELECT count(*) FROM " + qualified).Int(0, 0);
        snap.tables.push_back(std::move(table));
      }
    } catch (...) {
      try {
        c.Exec("ROLLBACK");
      } catch (...) {
      }
      throw;
    }
    c.Exec("COMMIT");
  }

  const PgDatabase& db_;
  std::unique_ptr<PgConnection> connection_;
  TableProbe side_;
};

}  // namespace

std::unique_ptr<TablesReader> OpenTablesReader(ScenarioEnv& env) {
  const std::string path = SqliteFile(env).path();
  if (const auto* pg = dynamic_cast<const PgBackend*>(&env.backend)) {
    return std::make_unique<PgTablesReader>(pg->database(), path);
  }
  return std::make_unique<TableProbe>(path);
}

}  // namespace dedupsim
