#include "views/color.h"

#include <cctype>
#include <cstring>

namespace dedupsim {

namespace {

constexpr std::string_view kReset = "\x1b[0m";
constexpr std::string_view kTag = "\x1b[1;36m";
constexpr std::string_view kGood = "\x1b[1;32m";
constexpr std::string_view kBad = "\x1b[1;31m";

bool IsDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// Length of the token at text[i] that counts as a figure, or 0.
size_t FigureAt(std::string_view text, size_t i) {
  const bool word_start = i == 0 || !std::isalnum(static_cast<unsigned char>(text[i - 1]));
  if (!word_start) return 0;
  for (std::string_view b : {std::string_view("True"), std::string_view("False")}) {
    if (text.substr(i, b.size()) == b &&
        (i + b.size() == text.size() ||
         !std::isalnum(static_cast<unsigned char>(text[i + b.size()])))) {
      return b.size();
    }
  }
  size_t j = i;
  if (j < text.size() && text[j] == '-' && j + 1 < text.size() && IsDigit(text[j + 1])) ++j;
  if (j < text.size() && IsDigit(text[j])) {
    while (j < text.size() &&
           (IsDigit(text[j]) || (text[j] == '.' && j + 1 < text.size() && IsDigit(text[j + 1])))) {
      ++j;
    }
    if (j == text.size() || !std::isalpha(static_cast<unsigned char>(text[j]))) return j - i;
    return 0;
  }
  // A word right after ": " is a value too (second delivery: NeedsReconciliation).
  if (i >= 2 && text.substr(i - 2, 2) == ": ") {
    while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_'))
      ++j;
    return j - i;
  }
  return 0;
}

}  // namespace

std::optional<ColorChoice> ParseColorChoice(std::string_view text) {
  if (text == "auto") return ColorChoice::kAuto;
  if (text == "always") return ColorChoice::kAlways;
  if (text == "never") return ColorChoice::kNever;
  return std::nullopt;
}

bool ShouldColor(ColorChoice choice, bool is_terminal, const char* no_color, const char* term) {
  if (choice == ColorChoice::kAlways) return true;
  if (choice == ColorChoice::kNever) return false;
  if (!is_terminal) return false;
  if (no_color != nullptr && no_color[0] != '\0') return false;
  if (term != nullptr && std::strcmp(term, "dumb") == 0) return false;
  return true;
}

std::string ColorizeLine(std::string_view line, bool as_expected) {
  std::string out;
  size_t i = 0;
  if (!line.empty() && line[0] == '[') {
    size_t close = line.find(']');
    if (close != std::string_view::npos) {
      out += kTag;
      out += line.substr(0, close + 1);
      out += kReset;
      i = close + 1;
    }
  }
  const size_t arrow = line.find(" -> ");
  if (arrow == std::string_view::npos) {
    out += line.substr(i);
    return out;
  }
  out += line.substr(i, arrow - i);
  i = arrow;
  const std::string_view color = as_expected ? kGood : kBad;
  while (i < line.size()) {
    size_t n = FigureAt(line, i);
    if (n > 0) {
      out += color;
      out += line.substr(i, n);
      out += kReset;
      i += n;
    } else {
      out += line[i++];
    }
  }
  return out;
}

std::string StripColor(std::string_view text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
      i += 2;
      while (i < text.size() && !std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
      ++i;  // the final letter
      continue;
    }
    out += text[i++];
  }
  return out;
}

}  // namespace dedupsim
