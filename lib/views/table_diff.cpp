#include "views/table_diff.h"

namespace dedupsim {

std::vector<std::string> RowKey(const TableState& table, const std::vector<std::string>& row) {
  if (table.key.empty()) return row;
  std::vector<std::string> key;
  for (size_t column : table.key) key.push_back(column < row.size() ? row[column] : "");
  return key;
}

TableDiff DiffTable(const TableState* before, const TableState& now) {
  TableDiff diff;
  auto complete = [](const TableState& t) {
    return static_cast<int64_t>(t.rows.size()) >= t.total_rows;
  };
  if (before == nullptr) {
    for (size_t i = 0; i < now.rows.size(); ++i) diff.added.insert(i);
    return diff;
  }
  std::map<std::vector<std::string>, size_t> was;
  for (size_t i = 0; i < before->rows.size(); ++i) was[RowKey(*before, before->rows[i])] = i;
  std::set<std::vector<std::string>> still;
  for (size_t i = 0; i < now.rows.size(); ++i) {
    std::vector<std::string> key = RowKey(now, now.rows[i]);
    still.insert(key);
    auto it = was.find(key);
    if (it == was.end()) {
      if (complete(*before)) diff.added.insert(i);
      continue;
    }
    const std::vector<std::string>& old = before->rows[it->second];
    for (size_t c = 0; c < now.rows[i].size(); ++c) {
      if (c >= old.size() || old[c] != now.rows[i][c]) diff.changed[i].insert(c);
    }
  }
  if (complete(now)) {
    for (const std::vector<std::string>& row : before->rows) {
      if (!still.count(RowKey(*before, row))) diff.deleted.push_back(row);
    }
  }
  return diff;
}

}  // namespace dedupsim
