// The step-through page's eyes: a reader of every table of a run's stores (the database,
// and the side stores when they exist), as the tables are at that moment. Used as the
// Recorder's observer while a scenario runs, so the page shows what the database held
// after each step, never a recomputation.
//
// A reader never waits for a lock a consumer holds: a read that cannot be made is reported
// as such. It is not traced (its reads are not steps of the run). One thread at a time
// (the Recorder serialises its observer calls). Never carry one across fork().
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

// Reads every table of a run's stores now. Each backend has its own (Backend::
// OpenTablesReader: SQLite's read-only connections to its files, sqlite/table_probe.h;
// PostgreSQL's connection of its own to the schema, postgres/tables_reader.h), and so do
// the side stores (SideStores::OpenTablesReader).
class TablesReader {
 public:
  // The rows a read keeps of each table (TableState::rows); total_rows counts them all.
  static constexpr int64_t kMaxRows = 12;

  virtual ~TablesReader() = default;
  // Every table now, stamped as read after `after`. Never waits for a lock; a read that
  // cannot be made says why (TablesSnapshot::unreadable).
  virtual TablesSnapshot Read(const TraceEvent& after) = 0;
};

}  // namespace dedupsim
