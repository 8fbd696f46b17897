#include "explore/step_label.h"

#include <cctype>
#include <vector>

namespace dedupsim::explore {

namespace {

std::vector<std::string> Words(std::string_view sql, size_t limit) {
  std::vector<std::string> words;
  std::string word;
  for (char c : sql) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      word.push_back(c);
    } else if (!word.empty()) {
      words.push_back(std::move(word));
      word.clear();
      if (words.size() == limit) return words;
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// The word after the first `marker` (case-insensitive), or "".
std::string After(const std::vector<std::string>& words, std::string_view marker) {
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    if (Upper(words[i]) == marker) return words[i + 1];
  }
  return "";
}

}  // namespace

std::string StepLabel(std::string_view sql) {
  std::vector<std::string> words = Words(sql, 64);
  if (words.empty()) return "(empty)";
  std::string keyword = Upper(words[0]);
  std::string table;
  if (keyword == "INSERT") {
    table = After(words, "INTO");
  } else if (keyword == "UPDATE") {
    table = words.size() > 1 ? words[1] : "";
    if (Upper(table) == "OR" && words.size() > 3) table = words[3];  // UPDATE OR IGNORE t
  } else if (keyword == "DELETE" || keyword == "SELECT") {
    table = After(words, "FROM");
  } else if (keyword == "BEGIN" && words.size() > 1) {
    std::string kind = Upper(words[1]);
    if (kind == "IMMEDIATE" || kind == "EXCLUSIVE") return keyword + " " + kind;
  }
  return table.empty() ? keyword : keyword + " " + table;
}

}  // namespace dedupsim::explore
