#include "views/step_text.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <vector>

namespace dedupsim {

namespace {

std::vector<std::string> Words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == '(' || c == ')' || c == ',') {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    } else {
      word.push_back(c);
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

std::string Upper(std::string_view word) {
  std::string out(word);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// The word after the first `keyword` (case-insensitive), or "".
std::string After(const std::vector<std::string>& words, std::string_view keyword) {
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    if (Upper(words[i]) == keyword) return words[i + 1];
  }
  return "";
}

std::string Joined(std::string_view verb, const std::string& table) {
  return table.empty() ? std::string(verb) : fmt::format("{} {}", verb, table);
}

}  // namespace

std::string AbbreviateSql(std::string_view sql) {
  std::vector<std::string> words = Words(sql);
  if (words.empty()) return "";
  const std::string verb = Upper(words[0]);
  if (verb == "INSERT" || verb == "REPLACE") return Joined(verb, After(words, "INTO"));
  if (verb == "UPDATE") return Joined(verb, words.size() > 1 ? words[1] : "");
  if (verb == "DELETE") return Joined(verb, After(words, "FROM"));
  if (verb == "SELECT") return Joined(verb, After(words, "FROM"));
  if (verb == "BEGIN") {
    const bool plain = words.size() < 2 || Upper(words[1]) == "TRANSACTION";
    return plain ? verb : fmt::format("{} {}", verb, Upper(words[1]));
  }
  if (verb == "PRAGMA") return words.size() > 1 ? fmt::format("PRAGMA {}", words[1]) : verb;
  return verb;
}

SqlControl ClassifySql(std::string_view sql) {
  std::vector<std::string> words = Words(sql);
  if (words.empty()) return SqlControl::kNone;
  const std::string verb = Upper(words[0]);
  if (verb == "BEGIN") return SqlControl::kBegin;
  if (verb == "COMMIT" || verb == "END") return SqlControl::kCommit;
  // "ROLLBACK TO savepoint" keeps the transaction open.
  if (verb == "ROLLBACK" && Upper(After(words, "ROLLBACK")) != "TO") return SqlControl::kRollback;
  return SqlControl::kNone;
}

std::string DescribeResult(const TraceEvent& e, bool with_timings) {
  std::string result = e.result.empty() ? "ok" : e.result;
  const bool select = Upper(AbbreviateSql(e.detail)).rfind("SELECT", 0) == 0;
  if (select && result == "ok") result = "no row";
  if (e.busy_calls > 0) {
    if (with_timings) {
      result +=
          fmt::format(", waited {} ms", std::lround(static_cast<double>(e.waited_us) / 1000.0));
    } else {
      result += ", waited";
    }
  }
  return result;
}

std::string ScrubPids(std::string_view text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (text.substr(i, 4) == "pid " && i + 4 < text.size() &&
        std::isdigit(static_cast<unsigned char>(text[i + 4]))) {
      out += "pid N";
      i += 4;
      while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

}  // namespace dedupsim
