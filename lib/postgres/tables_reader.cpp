#include "postgres/tables_reader.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "postgres/store.h"

namespace dedupsim {

namespace {

class PgTablesReader final : public TablesReader {
 public:
  // sides: where the lessons' side stores go; the reader reads them once a lesson has
  // made their place, and never makes it. Null: the schema's tables only.
  PgTablesReader(const PgDatabase& db, const SideStores* sides) : db_(db), sides_(sides) {}

  TablesSnapshot Read(const TraceEvent& after) override {
    TablesSnapshot snap = SnapshotAfter(after);
    try {
      ReadServer(snap);
    } catch (const std::exception& e) {
      snap.tables.clear();
      snap.unreadable = std::string("database: ") + e.what();
      connection_.reset();  // a broken session is opened anew at the next read
    }
    // The side stores after the server's tables, as SQLite's reader lists them after its
    // file's.
    if (!side_ && sides_ != nullptr) side_ = sides_->OpenTablesReader();
    if (!side_) return snap;
    TablesSnapshot side = side_->Read(after);
    if (snap.unreadable.empty()) {
      snap.unreadable = side.unreadable;
      if (side.unreadable.empty()) {
        for (TableState& t : side.tables) snap.tables.push_back(std::move(t));
      } else {
        snap.tables.clear();
      }
    }
    return snap;
  }

 private:
  // One table of the schema as the reader shows it: its name, columns and key as our CREATE
  // TABLE spells them, and the part of the read statement that reads it.
  struct Table {
    TableState shape;  // store, name, columns, key; no rows
    std::string rows_sql;
    std::string count_sql;
  };

  // The schema's tables, once (dedupsim creates them all when it opens the schema; none is
  // added while a run goes on), and the one statement that reads them all: one round trip
  // and one snapshot per step.
  void Prepare(PgConnection& c) {
    PgResult tables = c.Exec(
        "SELECT c.oid::text, c.relname FROM pg_class c JOIN pg_namespace n "
        "ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r' ORDER BY c.oid",
        {db_.schema()});
    std::string sql = "SELECT ";
    for (int t = 0; t < tables.rows(); ++t) {
      const std::string oid = tables.Text(t, 0);
      const std::string relname = tables.Text(t, 1);
      Table table;
      table.shape.store = "database";
      table.shape.name = SchemaSpelling(relname);
      PgResult columns = c.Exec(
          "SELECT attname, attnum::text FROM pg_attribute WHERE attrelid = $1::oid "
          "AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
          {oid});
      std::vector<std::string> attnums, names;
      std::string cells;
      for (int i = 0; i < columns.rows(); ++i) {
        names.push_back(columns.Text(i, 0));
        attnums.push_back(columns.Text(i, 1));
        table.shape.columns.push_back(SchemaSpelling(names.back()));
        cells += (cells.empty() ? "" : ", ") + QuoteIdentifier(names.back()) + "::text";
      }
      PgResult key = c.Exec(
          "SELECT k.attnum::text FROM pg_index i, unnest(i.indkey) WITH ORDINALITY "
          "AS k(attnum, ord) WHERE i.indrelid = $1::oid AND i.indisprimary ORDER BY k.ord",
          {oid});
      std::string order_by;
      for (int i = 0; i < key.rows(); ++i) {
        for (size_t col = 0; col < attnums.size(); ++col) {
          if (attnums[col] != key.Text(i, 0)) continue;
          table.shape.key.push_back(col);
          order_by += (order_by.empty() ? " ORDER BY " : ", ") + QuoteIdentifier(names[col]);
        }
      }
      const std::string qualified = QuoteIdentifier(db_.schema()) + "." + QuoteIdentifier(relname);
      // The first kMaxRows rows in key order, each as a JSON array of its cells' text (NULL
      // as null), and the count of all.
      sql += fmt::format(
          "{}(SELECT coalesce(json_agg(json_build_array({})), '[]')::text FROM "
          "(SELECT * FROM {}{} LIMIT {}) AS r), (SELECT count(*) FROM {})",
          t == 0 ? "" : ", ", cells, qualified, order_by, TablesReader::kMaxRows, qualified);
      tables_.push_back(std::move(table));
    }
    read_sql_ = tables_.empty() ? "" : sql;
  }

  void ReadServer(TablesSnapshot& snap) {
    if (!connection_) {
      tables_.clear();
      connection_ = std::make_unique<PgConnection>(db_.Connect());
      connection_->Exec("SET statement_timeout = 2000");
      Prepare(*connection_);
    }
    if (read_sql_.empty()) return;
    // One statement: one snapshot of every table, as committed when it began.
    PgResult read = connection_->Exec(read_sql_);
    for (size_t t = 0; t < tables_.size(); ++t) {
      TableState table = tables_[t].shape;
      const auto column = static_cast<int>(2 * t);
      for (const auto& cells : nlohmann::json::parse(read.Text(0, column))) {
        std::vector<std::string> row;
        for (const auto& cell : cells) row.push_back(cell.is_null() ? "NULL" : cell.get<std::string>());
        table.rows.push_back(std::move(row));
      }
      table.total_rows = read.Int(0, column + 1);
      snap.tables.push_back(std::move(table));
    }
  }

  const PgDatabase& db_;
  std::unique_ptr<PgConnection> connection_;
  std::vector<Table> tables_;
  std::string read_sql_;  // reads every table at once (Prepare)
  const SideStores* sides_;         // null: no side stores
  std::unique_ptr<TablesReader> side_;  // once the side stores' folder is made
};

}  // namespace

std::unique_ptr<TablesReader> OpenPgTablesReader(const PgDatabase& db, const SideStores* sides) {
  return std::make_unique<PgTablesReader>(db, sides);
}

}  // namespace dedupsim
