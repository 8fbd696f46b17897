#include "views/color.h"

#include <cctype>
#include <cstring>

#include "views/event_text.h"

namespace dedupsim {

namespace {

constexpr std::string_view kReset = "\x1b[0m";
constexpr std::string_view kTag = "\x1b[1;36m";
constexpr std::string_view kGood = "\x1b[1;32m";
constexpr std::string_view kBad = "\x1b[1;31m";
constexpr std::string_view kCheckFailed = "\x1b[1;30;43m";

// The mark after a judged figure, as after a judged step in the pictures.
std::string_view VerdictMark(bool correct) { return ToneMark(correct ? Tone::kRight : Tone::kWrong); }

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

std::vector<JudgedPiece> JudgedPieces(std::string_view line,
                                      const std::vector<FigureMark>& marks) {
  std::vector<JudgedPiece> out;
  size_t i = 0;
  for (const FigureMark& mark : marks) {
    if (mark.begin < i || mark.begin + mark.size > line.size()) continue;
    if (mark.begin > i) out.push_back({std::string(line.substr(i, mark.begin - i)), {}});
    out.push_back({std::string(line.substr(mark.begin, mark.size)) + std::string(VerdictMark(mark.correct)),
                   mark.correct});
    i = mark.begin + mark.size;
  }
  if (i < line.size()) out.push_back({std::string(line.substr(i)), {}});
  return out;
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
  std::vector<FigureMark> after_tag;
  for (const FigureMark& mark : marks) {
    if (mark.begin >= i) after_tag.push_back({mark.begin - i, mark.size, mark.correct});
  }
  for (const JudgedPiece& piece : JudgedPieces(line.substr(i), after_tag)) {
    if (!piece.correct) {
      out += piece.text;
      continue;
    }
    out += *piece.correct ? kGood : kBad;
    out += piece.text;
    out += kReset;
  }
  return out;
}

std::string StripColor(std::string_view text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
      // A coloured figure's mark, just before its reset, is not the plain line's.
      for (bool correct : {true, false}) {
        const std::string_view mark = VerdictMark(correct);
        if (text.substr(i, kReset.size()) == kReset && out.size() >= mark.size() &&
            std::string_view(out).substr(out.size() - mark.size()) == mark) {
          out.resize(out.size() - mark.size());
        }
      }
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
