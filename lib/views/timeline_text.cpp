#include "views/timeline_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "views/color.h"

namespace dedupsim::timeline {

namespace {

// "130.3" or "(4096": a figure whose unit may follow.
bool IsFigure(std::string_view word) {
  if (!word.empty() && word.front() == '(') word.remove_prefix(1);
  return !word.empty() && std::isdigit(static_cast<unsigned char>(word.front())) &&
         std::all_of(word.begin(), word.end(), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
         });
}

// "ms", "bytes" or "ms)," : a unit, whatever punctuation follows it.
bool IsUnit(std::string_view word) {
  word = word.substr(0, word.find_first_of(",;:)"));
  return word == "ms" || word == "bytes" || word == "rows" || word == "row";
}

}  // namespace

std::string Escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Num(double v) { return fmt::format("{:.1f}", v); }

size_t Glyphs(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

double TextWidth(std::string_view text, double font) {
  return static_cast<double>(Glyphs(text)) * 0.61 * font;
}

std::vector<std::string> Wrap(const std::string& text, size_t chars) {
  std::vector<std::string> lines;
  std::string line;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    if (end < text.size() && IsFigure(std::string_view(text).substr(start, end - start))) {
      size_t unit_end = text.find(' ', end + 1);
      if (unit_end == std::string::npos) unit_end = text.size();
      if (IsUnit(std::string_view(text).substr(end + 1, unit_end - end - 1))) end = unit_end;
    }
    std::string word = text.substr(start, end - start);
    if (!line.empty() && Glyphs(line) + 1 + Glyphs(word) > chars) {
      lines.push_back(line);
      line.clear();
    }
    if (!line.empty()) line += ' ';
    line += word;
    start = end + 1;
  }
  if (!line.empty() || lines.empty()) lines.push_back(line);
  return lines;
}

std::vector<std::vector<Run>> WrapLine(const std::string& judged_line,
                                       const std::vector<FigureMark>& marks, size_t chars) {
  // The line as the terminal colours it, each judged figure with its mark.
  std::string line;
  std::vector<std::string> css;
  for (const JudgedPiece& piece : JudgedPieces(judged_line, marks)) {
    line += piece.text;
    css.resize(line.size(),
               !piece.correct ? "line" : *piece.correct ? "line right" : "line wrong");
  }
  std::vector<std::vector<Run>> out;
  // Broken at a space at most `chars` in (the line's own spacing, its tag column, kept).
  size_t start = 0;
  while (start < line.size()) {
    size_t end = line.size();
    if (line.size() - start > chars) {
      end = line.rfind(' ', start + chars);
      if (end == std::string::npos || end <= start) end = line.find(' ', start + chars);
      if (end == std::string::npos) end = line.size();
    }
    std::vector<Run> runs;
    for (size_t i = start; i < end; ++i) {
      if (runs.empty() || runs.back().css != css[i]) runs.push_back({"", css[i]});
      runs.back().text += line[i];
    }
    out.push_back(std::move(runs));
    start = end;
    while (start < line.size() && line[start] == ' ') ++start;
  }
  if (out.empty()) out.emplace_back();
  return out;
}

}  // namespace dedupsim::timeline
