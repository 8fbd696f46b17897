// The step-through page's eyes: reads every table of the database (and of the side stores
// beside it, when they exist) through its own read-only connection, as the tables are at
// that moment. Used as the Recorder's observer while a scenario runs, so the page shows
// what the database held after each step, never a recomputation.
//
// It never waits: a read that finds the database locked (rollback-journal mode, another
// connection writing) is reported as such. In WAL mode its reads block no writer. It is
// not traced (its reads are not steps of the run). One thread at a time (the Recorder
// serialises its observer calls). Never carry one across fork().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "trace/trace.h"

namespace dedupsim {

struct TableState {
  std::string store;  // "database", "cache", "email provider"
  std::string name;
  std::vector<std::string> columns;
  // The primary key's columns (indexes into columns), in key order: what names a row from
  // one read to the next. Empty: the table has none, and a row is named by all its cells.
  std::vector<size_t> key;
  std::vector<std::vector<std::string>> rows;  // at most kMaxRows, NULL as "NULL"
  int64_t total_rows = 0;
};

struct TablesSnapshot {
  // The event it was taken after: its seq (TraceEvent::seq) names it; the rest says it.
  int64_t seq = 0;
  int64_t at_us = 0;
  int pid = 0;
  std::string kind;
  std::string instance;
  std::string detail;
  std::vector<TableState> tables;
  std::string unreadable;  // why it could not be read ("database is locked"), or ""
};

// An empty snapshot stamped as taken after `after` (its seq, time, process and words).
TablesSnapshot SnapshotAfter(const TraceEvent& after);

// Reads every table of a run's stores now. The SQLite reader is TableProbe (below); a
// PostgreSQL one reads the schema's tables through a connection of its own
// (lesson/tables_reader.h).
class TablesReader {
 public:
  virtual ~TablesReader() = default;
  // Every table now, stamped as read after `after`. Never waits for a lock; a read that
  // cannot be made says why (TablesSnapshot::unreadable).
  virtual TablesSnapshot Read(const TraceEvent& after) = 0;
};

class TableProbe final : public TablesReader {
 public:
  static constexpr int64_t kMaxRows = 12;
  // path: the main database; side stores are looked for at path + ".cache" and
  // path + ".provider" on each read.
  explicit TableProbe(std::string path);
  // Exactly these stores: (label, path) pairs, such as the explorer's database and its
  // second file.
  explicit TableProbe(std::vector<std::pair<std::string, std::string>> stores);
  ~TableProbe();

  // Reads every table now, stamped as taken after `after`.
  TablesSnapshot Read(const TraceEvent& after) override;

 private:
  // A store's label, path and read-only connection, opened at the first read that finds
  // the file (defined with the reads: the header names no backend's type).
  struct Store;
  std::vector<Store> stores_;
};

}  // namespace dedupsim
