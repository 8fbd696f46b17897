#include "explore/footprint.h"

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

Footprint StatementFootprint(const std::string& label, uint8_t file) {
  Footprint f;
  if (label == "BEGIN") return f;  // deferred: no lock until its first statement
  if (label.starts_with("SELECT")) {
    f.reads = file;
  } else {
    f.writes = file;
  }
  return f;
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
