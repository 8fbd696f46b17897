#include "views/doc_page.h"

#include <fmt/format.h>

#include "views/mermaid.h"

namespace dedupsim {

namespace {

// Lines with their newlines, so joining them gives the page back exactly.
std::vector<std::string> Lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size() - 1;
    lines.emplace_back(text.substr(start, end - start + 1));
    start = end + 1;
  }
  return lines;
}

std::string Trimmed(std::string_view line) {
  size_t end = line.size();
  while (end > 0 && (line[end - 1] == '\n' || line[end - 1] == '\r' || line[end - 1] == ' ' ||
                     line[end - 1] == '\t')) {
    --end;
  }
  return std::string(line.substr(0, end));
}

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += line;
  return out;
}

std::vector<std::string> Marked(const GeneratedSection& s) {
  std::vector<std::string> out{BeginMarker(s.key) + "\n"};
  for (std::string& line : Lines(s.block)) out.push_back(std::move(line));
  if (!out.back().empty() && out.back().back() != '\n') out.back() += '\n';
  out.push_back(EndMarker(s.key) + "\n");
  return out;
}

std::vector<std::string> Rewrite(std::vector<std::string> lines, const GeneratedSection& s) {
  const std::string begin = BeginMarker(s.key), end = EndMarker(s.key);
  size_t b = lines.size(), e = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string t = Trimmed(lines[i]);
    if (t == begin && b == lines.size()) b = i;
    if (t == end && e == lines.size()) e = i;
  }
  if (b != lines.size() || e != lines.size()) {
    if (b == lines.size() || e == lines.size() || e < b) {
      throw DocPageError(fmt::format(
          "the markers of the {} section are broken (need '{}' then '{}')", s.key, begin, end));
    }
    std::vector<std::string> marked = Marked(s);
    lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(b),
                lines.begin() + static_cast<std::ptrdiff_t>(e + 1));
    lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(b), marked.begin(), marked.end());
    return lines;
  }

  const std::string heading = "## " + s.heading;
  size_t h = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    if (Trimmed(lines[i]) == heading) {
      h = i;
      break;
    }
  }
  if (h == lines.size()) return lines;  // the page has no such section
  if (!lines[h].empty() && lines[h].back() != '\n') lines[h] += '\n';

  size_t at = h + 1;
  while (at < lines.size() && Trimmed(lines[at]).empty()) ++at;
  size_t replace_end = at;  // [h + 1, replace_end) is dropped: blank lines, a pasted block
  if (at < lines.size() && Trimmed(lines[at]).rfind("```", 0) == 0) {
    size_t close = at + 1;
    while (close < lines.size() && Trimmed(lines[close]) != "```") ++close;
    if (close < lines.size()) replace_end = close + 1;
  }
  std::vector<std::string> insert{"\n"};
  std::vector<std::string> marked = Marked(s);
  insert.insert(insert.end(), marked.begin(), marked.end());
  // Keep a blank line before whatever follows.
  if (replace_end < lines.size() && !Trimmed(lines[replace_end]).empty()) insert.push_back("\n");
  lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(h + 1),
              lines.begin() + static_cast<std::ptrdiff_t>(replace_end));
  lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(h + 1), insert.begin(), insert.end());
  return lines;
}

}  // namespace

std::string BeginMarker(std::string_view key) {
  return fmt::format("<!-- dedupsim docs: begin {} (generated: do not edit) -->", key);
}

std::string EndMarker(std::string_view key) {
  return fmt::format("<!-- dedupsim docs: end {} -->", key);
}

std::string RewritePage(std::string_view page, const std::vector<GeneratedSection>& sections) {
  std::vector<std::string> lines = Lines(page);
  for (const GeneratedSection& s : sections) lines = Rewrite(std::move(lines), s);
  return Join(lines);
}

std::string FencedBlock(std::string_view language, std::string_view text) {
  std::string body(text);
  if (body.empty() || body.back() != '\n') body += '\n';
  return fmt::format("```{}\n{}```\n", language, body);
}

std::vector<GeneratedSection> ScenarioPageSections(std::string_view scenario, std::string_view line,
                                                   const std::vector<TraceEvent>& events) {
  MermaidOptions options;
  options.timings = false;
  options.title = fmt::format("dedupsim run {}", scenario);
  return {
      {"Output", "output", FencedBlock("text", line)},
      {"Diagram", "diagram", FencedBlock("mermaid", MermaidDiagram(events, options))},
  };
}

}  // namespace dedupsim
