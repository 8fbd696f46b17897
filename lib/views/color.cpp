#include "views/color.h"

#include <cctype>
#include <cstring>

namespace dedupsim {

namespace {

constexpr std::string_view kReset = "\x1b[0m";
constexpr std::string_view kTag = "\x1b[1;36m";
constexpr std::string_view kGood = "\x1b[1;32m";
constexpr std::string_view kBad = "\x1b[1;31m";
constexpr std::string_view kCheckFailed = "\x1b[1;30;43m";

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

std::string ColorizeLine(std::string_view line, const std::vector<FigureMark>& marks,
                         bool check_failed) {
  std::string out;
  size_t i = 0;
  if (!line.empty() && line[0] == '[') {
    size_t close = line.find(']');
    if (close != std::string_view::npos) {
      out += check_failed ? kCheckFailed : kTag;
      out += line.substr(0, close + 1);
      out += kReset;
      i = close + 1;
    }
  }
  for (const FigureMark& mark : marks) {
    if (mark.begin < i || mark.begin + mark.size > line.size()) continue;
    out += line.substr(i, mark.begin - i);
    out += mark.correct ? kGood : kBad;
    out += line.substr(mark.begin, mark.size);
    out += kReset;
    i = mark.begin + mark.size;
  }
  out += line.substr(i);
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
