#include "sqlite/table_probe.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <chrono>

#include "sqlite/connection.h"
#include "sqlite/error.h"
#include "sqlite/side_store.h"

namespace dedupsim {

namespace {

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string Quote(const std::string& name) {
  std::string out = "\"";
  for (char c : name) {
    out += c;
    if (c == '"') out += '"';
  }
  return out + "\"";
}

// Runs sql on db, calling row(stmt) for each row. Returns an SQLite error text, or "".
template <typename Row>
std::string Query(sqlite3* db, const std::string& sql, Row row) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr);
  if (rc != SQLITE_OK) return sqlite3_errmsg(db);
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) row(stmt);
  std::string error = rc == SQLITE_DONE ? "" : sqlite3_errmsg(db);
  sqlite3_finalize(stmt);
  return error;
}

std::string Text(sqlite3_stmt* stmt, int i) {
  if (sqlite3_column_type(stmt, i) == SQLITE_NULL) return "NULL";
  const unsigned char* text = sqlite3_column_text(stmt, i);
  return text != nullptr ? reinterpret_cast<const char*>(text) : "";
}

}  // namespace

struct TableProbe::Store {
  std::string label;
  std::string path;
  std::unique_ptr<Connection> connection;
};

TableProbe::TableProbe(std::string path) {
  stores_.push_back({"database", path, nullptr});
  stores_.push_back({"cache", path + kDedupCacheSuffix, nullptr});
  stores_.push_back({"email provider", path + kEmailProviderSuffix, nullptr});
}

TableProbe::TableProbe(std::vector<std::pair<std::string, std::string>> stores) {
  for (auto& [label, path] : stores)
    stores_.push_back({std::move(label), std::move(path), nullptr});
}

TableProbe::~TableProbe() = default;

TablesSnapshot TableProbe::Read(const TraceEvent& after) {
  TablesSnapshot snap = SnapshotAfter(after);
  for (Store& store : stores_) {
    if (!Exists(store.path)) {
      store.connection.reset();  // removed: a later store at the path is a new file
      continue;
    }
    try {
      if (!store.connection) {
        store.connection = std::make_unique<Connection>(
            store.path,
            ConnectionOptions{.read_only = true, .busy_timeout = std::chrono::milliseconds(0)});
      }
    } catch (const std::exception& e) {
      snap.unreadable = e.what();
      continue;
    }
    sqlite3* db = store.connection->handle();
    std::vector<std::string> names;
    std::string error =
        Query(db,
              "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
              "ORDER BY rowid",
              [&](sqlite3_stmt* s) { names.push_back(Text(s, 0)); });
    // One read transaction, so the tables are read as of one moment.
    if (error.empty()) sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
    for (const std::string& name : names) {
      if (!error.empty()) break;
      TableState table;
      table.store = store.label;
      table.name = name;
      bool first = true;
      error = Query(db, "SELECT * FROM " + Quote(name) + " LIMIT " + std::to_string(kMaxRows),
                    [&](sqlite3_stmt* s) {
                      const int n = sqlite3_column_count(s);
                      if (first) {
                        for (int i = 0; i < n; ++i)
                          table.columns.emplace_back(sqlite3_column_name(s, i));
                        first = false;
                      }
                      std::vector<std::string> row;
                      for (int i = 0; i < n; ++i) row.push_back(Text(s, i));
                      table.rows.push_back(std::move(row));
                    });
      if (error.empty() && first) {  // no rows: the columns from the table's own list
        error = Query(db, "SELECT name FROM pragma_table_info(" + Quote(name) + ")",
                      [&](sqlite3_stmt* s) { table.columns.push_back(Text(s, 0)); });
      }
      if (error.empty()) {  // the primary key's columns, in key order
        error = Query(db,
                      "SELECT cid FROM pragma_table_info(" + Quote(name) +
                          ") WHERE pk > 0 ORDER BY pk",
                      [&](sqlite3_stmt* s) {
                        table.key.push_back(static_cast<size_t>(sqlite3_column_int64(s, 0)));
                      });
      }
      if (error.empty()) {
        error = Query(db, "SELECT count(*) FROM " + Quote(name),
                      [&](sqlite3_stmt* s) { table.total_rows = sqlite3_column_int64(s, 0); });
      }
      snap.tables.push_back(std::move(table));
    }
    sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    if (!error.empty()) {
      snap.unreadable = store.label + ": " + error;
      snap.tables.clear();
      break;
    }
  }
  return snap;
}

}  // namespace dedupsim
