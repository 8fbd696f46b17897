#include "postgres/statement_shape.h"

#include "trace/trace.h"

namespace dedupsim {

namespace {

std::string Lower(std::string text) {
  for (char& c : text) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return text;
}

std::string UpperWord(std::string_view text, size_t& at) {
  while (at < text.size() && (text[at] == ' ' || text[at] == '\n' || text[at] == '(')) ++at;
  std::string word;
  while (at < text.size() && text[at] != ' ' && text[at] != '\n' && text[at] != '(' &&
         text[at] != ';') {
    char c = text[at++];
    word += static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  }
  return word;
}

// The word after the first `keyword` (upper case) in text, as written; "" when none.
std::string NameAfter(std::string_view text, std::string_view keyword) {
  size_t at = 0;
  while (at < text.size()) {
    if (UpperWord(text, at) == keyword) {
      while (at < text.size() && text[at] == ' ') ++at;
      size_t end = at;
      while (end < text.size() && text[end] != ' ' && text[end] != '(' && text[end] != ';') ++end;
      std::string name(text.substr(at, end - at));
      std::string unquoted;
      for (char c : name) {
        if (c != '"') unquoted += c;
      }
      return CanonicalTableName(unquoted);
    }
  }
  return "";
}

// Whether word is one of sql's words (letters, digits and _, in any case).
bool HasWord(std::string_view sql, std::string_view word) {
  std::string now;
  for (size_t i = 0; i <= sql.size(); ++i) {
    const char c = i < sql.size() ? sql[i] : ' ';
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_') {
      now += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    } else {
      if (now == word) return true;
      now.clear();
    }
  }
  return false;
}

}  // namespace

std::string CanonicalTableName(const std::string& folded) {
  const std::string lower = Lower(folded);
  for (const char* name : {"StockItems", "Inbox", "InboxByMessageId", "StockReservations"}) {
    if (Lower(name) == lower) return name;
  }
  return folded;
}

StatementShape ShapeOf(std::string_view sql) {
  size_t at = 0;
  StatementShape shape;
  shape.op = UpperWord(sql, at);
  if (shape.op == "INSERT") {
    shape.table = NameAfter(sql, "INTO");
    // ON CONFLICT ... DO UPDATE: a row may be updated instead of inserted. Any word
    // "update" counts (in a comment, a value, a name too): the words then say less
    // ("inserted or updated"), never more.
    shape.may_update = HasWord(sql, "update");
  } else if (shape.op == "UPDATE") {
    shape.table = NameAfter(sql, "UPDATE");
  } else if (shape.op == "DELETE" || shape.op == "SELECT") {
    shape.table = NameAfter(sql, "FROM");
  } else if (shape.op == "START") {
    shape.op = "BEGIN";
  } else if (shape.op == "ROLLBACK" && UpperWord(sql, at) == "TO") {
    shape.op = kOpRollbackTo;  // a savepoint's: the transaction goes on
  } else if (shape.op == "SAVEPOINT" || shape.op == "RELEASE") {
    // As SQLite's authorizer reads them (SQLITE_SAVEPOINT).
  } else if (shape.op != "BEGIN" && shape.op != "COMMIT" && shape.op != "ROLLBACK") {
    shape.op = "OTHER";  // SET, ...: SQLite's reading too
  }
  return shape;
}

}  // namespace dedupsim
