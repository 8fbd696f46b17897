#include "explore/footprint.h"

#include <cctype>

namespace dedupsim::explore {

namespace {

uint8_t TableBit(std::string_view table) {
  if (table == "StockItems") return 1;
  if (table == "Inbox") return 2;
  if (table == "InboxByMessageId") return 4;
  if (table == "StockReservations") return 8;
  return kEveryTable;  // a table the explorer does not know: depends on everything
}

}  // namespace

bool Independent(const Footprint& a, const Footprint& b) {
  if (a.all || b.all) return false;
  return (a.writes & (b.reads | b.writes)) == 0 && (b.writes & a.reads) == 0;
}

Footprint StatementFootprint(const std::string& label, uint8_t file, uint8_t tables) {
  Footprint f;
  if (label == "BEGIN") return f;  // deferred: no lock until its first statement
  const bool read = label.starts_with("SELECT");
  if (file == kMainFile && tables != 0 && (label.starts_with("SELECT") ||
                                           label.starts_with("INSERT") ||
                                           label.starts_with("UPDATE") ||
                                           label.starts_with("DELETE"))) {
    if (read) {
      f.reads = tables;
    } else {
      f.reads = kMainFile;
      f.writes = tables;
    }
    return f;
  }
  if (file == kMainFile) file = kMainWhole;
  if (read) {
    f.reads = file;
  } else {
    f.writes = file;
  }
  return f;
}

Footprint WalStatementFootprint(const std::string& label, uint8_t file, uint8_t tables) {
  if (label == "BEGIN") return {};  // deferred: no lock until its first statement
  if (file == kMainFile && tables != 0) return StatementFootprint(label, file, tables);
  const uint16_t rows = file == kMainFile ? kMainTables : kAuxData;
  const uint16_t lock = file;
  if (label.starts_with("SELECT")) return {.reads = rows};
  if (label.starts_with("BEGIN")) return {.reads = static_cast<uint16_t>(rows | lock)};
  if (label.starts_with("INSERT") || label.starts_with("UPDATE") ||
      label.starts_with("DELETE") || label.starts_with("COMMIT") ||
      label.starts_with("ROLLBACK") || label.starts_with("END")) {
    return {.reads = lock, .writes = rows};
  }
  return {.writes = static_cast<uint16_t>(rows | lock)};  // anything else: the whole file
}

Footprint WithLockChange(Footprint f, uint8_t held_before, uint8_t held_after) {
  f.writes |= static_cast<uint16_t>((held_before ^ held_after) & (kMainFile | kAuxFile));
  return f;
}

Footprint BlockedFootprint(uint8_t file) { return {.reads = file}; }

uint8_t MainTableBits(std::string_view sql, const std::vector<std::string>& tables) {
  auto word_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' ||
           static_cast<unsigned char>(c) >= 0x80;
  };
  auto same = [](std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(a[i])) !=
          std::tolower(static_cast<unsigned char>(b[i]))) {
        return false;
      }
    }
    return true;
  };
  uint8_t bits = 0;
  size_t i = 0;
  while (i < sql.size()) {
    if (!word_char(sql[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < sql.size() && word_char(sql[j])) ++j;
    const std::string_view word = sql.substr(i, j - i);
    for (size_t t = 0; t < tables.size(); ++t) {
      if (same(word, tables[t])) bits |= static_cast<uint8_t>(4u << (t % 6));
    }
    i = j;
  }
  return bits;
}

Footprint PgStatementFootprint(const std::string& label) {
  Footprint f;
  if (label == "BEGIN") return f;  // takes no lock; the snapshot comes with the first statement
  size_t gap = label.find(' ');
  std::string op = label.substr(0, gap);
  uint8_t table = gap == std::string::npos ? kEveryTable : TableBit(label.substr(gap + 1));
  if (op == "SELECT") {
    f.reads = table;
  } else {
    f.writes = table;
  }
  return f;
}

}  // namespace dedupsim::explore
