#include "store/sql_text.h"

#include <fmt/format.h>

namespace dedupsim {

namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// The end of the comment that starts at i, or i when none starts there. An unterminated
// /* runs to the end of the text, as SQLite reads it.
size_t CommentEnd(std::string_view s, size_t i) {
  if (s.compare(i, 2, "--") == 0) {
    size_t end = s.find('\n', i);
    return end == std::string_view::npos ? s.size() : end + 1;
  }
  if (s.compare(i, 2, "/*") == 0) {
    size_t end = s.find("*/", i + 2);
    return end == std::string_view::npos ? s.size() : end + 2;
  }
  return i;
}

// The end of the quoted token that starts at i (a doubled closing quote stays inside), or
// i when none starts there.
size_t QuotedEnd(std::string_view s, size_t i) {
  char open = s[i];
  char close = open == '[' ? ']' : open;
  if (open != '\'' && open != '"' && open != '`' && open != '[') return i;
  size_t j = i + 1;
  while (j < s.size()) {
    if (s[j] == close) {
      if (close != ']' && j + 1 < s.size() && s[j + 1] == close) {
        j += 2;
        continue;
      }
      return j + 1;
    }
    ++j;
  }
  return s.size();
}

}  // namespace

std::string SqlOneLine(std::string_view sql) {
  std::string out;
  out.reserve(sql.size());
  bool space = false;
  size_t i = 0;
  while (i < sql.size()) {
    if (size_t end = CommentEnd(sql, i); end != i) {
      space = true;
      i = end;
      continue;
    }
    if (IsSpace(sql[i])) {
      space = true;
      ++i;
      continue;
    }
    if (space && !out.empty()) out.push_back(' ');
    space = false;
    size_t end = QuotedEnd(sql, i);
    if (end == i) end = i + 1;
    out.append(sql.substr(i, end - i));
    i = end;
  }
  return out;
}

std::string SqlForMessage(std::string_view sql, size_t max_chars) {
  std::string line = SqlOneLine(sql);
  if (line.size() <= max_chars) return line;
  size_t cut = max_chars;
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
  return fmt::format("{} ... ({} bytes)", line.substr(0, cut), sql.size());
}

size_t FindSqlParameter(std::string_view text, std::string_view name, size_t from) {
  auto name_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '$' || (static_cast<unsigned char>(c) & 0x80) != 0;
  };
  size_t i = from;
  while (i < text.size()) {
    if (size_t end = CommentEnd(text, i); end != i) {
      i = end;
      continue;
    }
    if (size_t end = QuotedEnd(text, i); end != i) {
      i = end;
      continue;
    }
    if (!name.empty() && text.compare(i, name.size(), name) == 0 &&
        (i + name.size() >= text.size() || !name_char(text[i + name.size()]))) {
      return i;
    }
    ++i;
  }
  return std::string_view::npos;
}

std::string QuoteSqlIdentifier(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

size_t SkipSpaceAndComments(std::string_view text, size_t from) {
  size_t i = from;
  while (i < text.size()) {
    if (IsSpace(text[i])) {
      ++i;
    } else if (size_t end = CommentEnd(text, i); end != i) {
      i = end;
    } else {
      break;
    }
  }
  return i;
}

}  // namespace dedupsim
