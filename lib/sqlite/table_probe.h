// SQLite's reader of a run's tables (store/tables_reader.h): every table of each of its
// files (the database, the side stores beside it), each through a read-only connection of
// its own, opened at the first read that finds the file; a file removed since is read anew
// when one is there again. The tables of one file are read in one read transaction, as of
// one moment.
//
// It never waits: a read that finds a file locked (rollback-journal mode, another
// connection writing) is reported as such. In WAL mode its reads block no writer.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "store/tables_reader.h"

namespace dedupsim {

class TableProbe final : public TablesReader {
 public:
  // path: the main database; side stores are looked for at path + ".cache" and
  // path + ".provider" on each read.
  explicit TableProbe(std::string path);
  // Exactly these stores: (label, path) pairs, such as the explorer's database and its
  // second file.
  explicit TableProbe(std::vector<std::pair<std::string, std::string>> stores);
  ~TableProbe() override;

  // Reads every table now, stamped as taken after `after`.
  TablesSnapshot Read(const TraceEvent& after) override;

 private:
  struct Store;  // a store's label, path and read-only connection
  std::vector<Store> stores_;
};

}  // namespace dedupsim
