#include "views/explain.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "lesson/options.h"

namespace dedupsim {

namespace {

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

void Fill(std::string_view paragraph, size_t width, std::string_view indent, std::string& out) {
  const size_t room = width > indent.size() + 20 ? width - indent.size() : 20;
  std::string line;
  size_t start = 0;
  while (start < paragraph.size()) {
    while (start < paragraph.size() && paragraph[start] == ' ') ++start;
    if (start >= paragraph.size()) break;
    size_t end = paragraph.find(' ', start);
    if (end == std::string_view::npos) end = paragraph.size();
    std::string_view word = paragraph.substr(start, end - start);
    if (!line.empty() && line.size() + 1 + word.size() > room) {
      out += fmt::format("{}{}\n", indent, line);
      line.clear();
    }
    if (!line.empty()) line += ' ';
    line += word;
    start = end;
  }
  if (!line.empty()) out += fmt::format("{}{}\n", indent, line);
}

}  // namespace

std::string WrapText(std::string_view text, size_t width, std::string_view indent) {
  std::string out;
  std::string paragraph;
  auto flush = [&] {
    if (!paragraph.empty()) Fill(paragraph, width, indent, out);
    paragraph.clear();
  };
  for (std::string_view line : SplitLines(text)) {
    if (line.empty()) {
      flush();
      out += '\n';
    } else if (line.front() == ' ') {
      flush();
      out += fmt::format("{}{}\n", indent, line);  // a command: kept whole
    } else {
      if (!paragraph.empty()) paragraph += ' ';
      paragraph += line;
    }
  }
  flush();
  return out;
}

std::string ExplainScenario(const Scenario& s, size_t width) {
  std::string out;
  out += fmt::format("{} [{}]\n", s.name, s.tag);
  out += WrapText(s.summary, width);
  out += "\nLesson\n";
  out += WrapText(s.lesson, width, "  ");
  out += "\nHook points\n";
  out += WrapText(s.hook_points, width, "  ");
  // The options this lesson takes that not every lesson does: said here, with the lesson,
  // so that no list of lessons stands in --help, docs/cli.md or the man page.
  out += "\nOptions\n";
  const std::vector<const LessonOption*> taken = LessonOptionsOf(s);
  if (taken.empty()) {
    out += WrapText("Only the options every lesson takes (dedupsim run --help).", width, "  ");
  } else {
    out += WrapText("Besides the options every lesson takes (dedupsim run --help):", width, "  ");
    for (const LessonOption* o : taken) {
      out += fmt::format("  {}\n", o->flag);
      out += WrapText(LessonOptionMeaning(*o), width, "    ");
    }
  }
  out += "\nTry next\n";
  out += WrapText(s.try_next, width, "  ");
  return out;
}

}  // namespace dedupsim
