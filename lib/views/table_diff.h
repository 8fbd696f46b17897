// What a step changed in a table, row by row: rows are matched by their primary key (never
// by their place in the listing), so a row that moved is not "changed" and a new row is not
// taken for an old one. Used by the step-through page.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "store/tables_reader.h"

namespace dedupsim {

struct TableDiff {
  std::set<size_t> added;                      // rows of `now` (indexes) not there before
  std::map<size_t, std::set<size_t>> changed;  // rows of `now` -> the columns that differ
  std::vector<std::vector<std::string>> deleted;  // rows before that are gone, as they were
  bool empty() const { return added.empty() && changed.empty() && deleted.empty(); }
};

// How `now` differs from `before` (null: the table did not exist: every row is added).
// A read holds at most TablesReader::kMaxRows rows: a row missing from a partial read is not
// said to be deleted, and one missing from a partial earlier read is not said to be added.
TableDiff DiffTable(const TableState* before, const TableState& now);

// The row's name: its primary key's cells (all its cells when the table has no key).
std::vector<std::string> RowKey(const TableState& table, const std::vector<std::string>& row);

}  // namespace dedupsim
