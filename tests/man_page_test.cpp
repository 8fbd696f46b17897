// The man page dedupsim(1), as the build wrote it (`dedupsim __man`), rendered by `man -l`
// as a user reads it: it says what docs/cli.md's generated Reference and Exit status say,
// command by command and option by option (the two are views of one description of the
// command definitions, and the docs test holds docs/cli.md to the program), renders
// without a groff warning, and its EXAMPLES run.
#include <catch2/catch.hpp>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "support.h"
#include "views/doc_page.h"

namespace man_page_test {

using namespace dedupsim;
using dedupsim::testing::CliResult;
using dedupsim::testing::ReadFile;
using dedupsim::testing::RunCliEach;
using dedupsim::testing::SplitLines;
using dedupsim::testing::TempDir;

namespace {

struct Rendered {
  int status = -1;
  std::string out;
  std::string err;
};

// `man -l PAGE` with every groff warning on (--warnings=w: groff -ww), in the C.UTF-8 locale
// and 100 columns, its output piped (so plain text, no pager).
Rendered RenderMan(const std::string& page) {
  TempDir dir;
  const std::string command =
      "LC_ALL=C.UTF-8 MANWIDTH=100 man --warnings=w -l '" + page + "' 2>'" + dir.File("err") + "'";
  Rendered r;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) r.out.append(buffer, n);
  r.status = ::pclose(pipe);
  r.err = ReadFile(dir.File("err"));
  return r;
}

const Rendered& ManPage() {
  static const Rendered rendered = RenderMan(DEDUPSIM_MAN_PAGE);
  return rendered;
}

// Words joined by single spaces: the text as it reads, whatever the lines' breaks. A line
// may break after a comma inside a list of values ({naive,check-then-process,...}), so a
// comma is followed by no space here, wherever it stands.
std::string Words(const std::string& text) {
  std::istringstream in(text);
  std::string word, out;
  while (in >> word) {
    if (!out.empty() && out.back() != ',') out += ' ';
    out += word;
  }
  return out;
}

// The rendered page's sections: a heading at the margin ("COMMANDS"), then its lines.
std::vector<std::pair<std::string, std::vector<std::string>>> Sections(const std::string& text) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const std::string& line : SplitLines(text)) {
    if (!line.empty() && line[0] != ' ') {
      out.push_back({line, {}});
    } else if (!out.empty()) {
      out.back().second.push_back(line);
    }
  }
  return out;
}

std::vector<std::string> Section(const std::string& heading) {
  for (auto& [name, lines] : Sections(ManPage().out)) {
    if (name == heading) return lines;
  }
  FAIL("the man page has no section " << heading);
  return {};
}

// A markdown table row's cells, "\|" read as "|".
std::vector<std::string> Cells(const std::string& row) {
  std::vector<std::string> cells;
  std::string cell;
  for (size_t i = 1; i < row.size(); ++i) {
    if (row[i] == '\\' && i + 1 < row.size() && row[i + 1] == '|') {
      cell += '|';
      ++i;
    } else if (row[i] == '|') {
      cells.push_back(Words(cell));
      cell.clear();
    } else {
      cell += row[i];
    }
  }
  return cells;
}

std::string Unquoted(std::string text) {
  std::string out;
  for (char c : text) {
    if (c != '`') out += c;
  }
  return out;
}

std::string Sentence(const std::string& text) {
  return !text.empty() && text.back() == '.' ? text : text + ".";
}

// The block docs/cli.md holds between a generated section's markers.
std::vector<std::string> CliPageBlock(const std::string& key) {
  const std::string page = ReadFile(std::string(DEDUPSIM_SOURCE_DIR) + "/docs/cli.md");
  const size_t begin = page.find(BeginMarker(key));
  const size_t end = page.find(EndMarker(key));
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  return SplitLines(page.substr(begin, end - begin));
}

// What the man page must say for one option row of docs/cli.md's Reference (option, value,
// default, [taken by,] meaning): the option and its value, the meaning, then the default
// and the kind of lesson that takes it when only some do.
std::string ExpectedEntry(const std::vector<std::string>& cells, bool by_scenario) {
  const std::string name = Unquoted(cells[0]);
  const std::string& value = cells[1];
  const std::string& fallback = cells[2];
  const std::string& meaning = cells[by_scenario ? 4 : 3];
  std::string out = name + (value == "flag" ? "" : " " + value) + " " + meaning;
  if (fallback == "required") {
    out += " Required.";
  } else if (fallback.front() == '`') {
    out += " Default: " + Unquoted(fallback) + ".";
  }
  if (by_scenario && cells[3] != "all lessons") out += " Taken by: " + cells[3] + ".";
  return out;
}

// docs/cli.md's Reference as the man page must read: the global options ("OPTIONS"), then
// "dedupsim <command>" for each command, each with its text.
std::vector<std::pair<std::string, std::string>> ExpectedFromCliPage() {
  std::vector<std::pair<std::string, std::string>> out{{"OPTIONS", "Before the command:"}};
  bool by_scenario = false;
  bool description_next = false;
  for (const std::string& line : CliPageBlock("reference")) {
    if (line.rfind("### ", 0) == 0) {
      out.push_back({line.substr(4), ""});
      description_next = true;
    } else if (description_next && !line.empty()) {
      out.back().second = Sentence(line);
      description_next = false;
    } else if (line.rfind("| ", 0) == 0 && line.rfind("| ---", 0) != 0) {
      const std::vector<std::string> cells = Cells(line);
      if (cells[0] == "option" || cells[0] == "global option") {
        by_scenario = cells.size() == 5;
        continue;
      }
      out.back().second += " " + ExpectedEntry(cells, by_scenario);
    } else if (!line.empty() && line.rfind("| ", 0) != 0 && out.size() > 1) {
      out.back().second += " " + line;  // the command's footer, after its table
    }
  }
  return out;
}

// The man page's OPTIONS, then each "dedupsim <command>" subsection of COMMANDS.
std::vector<std::pair<std::string, std::string>> ManReference() {
  std::vector<std::pair<std::string, std::string>> out{{"OPTIONS", Words([] {
                                                          std::string text;
                                                          for (const std::string& line :
                                                               Section("OPTIONS"))
                                                            text += line + "\n";
                                                          return text;
                                                        }())}};
  for (const std::string& line : Section("COMMANDS")) {
    if (line.rfind("   ", 0) == 0 && line.size() > 3 && line[3] != ' ') {
      out.push_back({Words(line), ""});
    } else if (out.size() > 1) {
      out.back().second = Words(out.back().second + " " + line);
    }
  }
  return out;
}

}  // namespace

// Mutation caught: a renderer that drops an option's default (ManOption without its
// "Default:" line) or the lessons that take it ("Taken by:"), a command's footer (run's: where
// a lesson's options are said) one view shows and the other does not, or an option or
// command one view shows and the other does not.
TEST_CASE("the man page says what docs/cli.md's reference says, option by option", "[docs][man]") {
  const std::vector<std::pair<std::string, std::string>> expected = ExpectedFromCliPage();
  const std::vector<std::pair<std::string, std::string>> shown = ManReference();
  REQUIRE(expected.size() > 5);
  std::vector<std::string> expected_names, shown_names;
  for (const auto& [name, text] : expected) expected_names.push_back(name);
  for (const auto& [name, text] : shown) shown_names.push_back(name);
  REQUIRE(shown_names == expected_names);
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO(expected[i].first);
    CHECK(shown[i].second == Words(expected[i].second));
  }
}

// Mutation caught: an exit status meaning changed in one view only (the man page's EXIT
// STATUS written from its own text instead of kExitStatusMeanings).
TEST_CASE("the man page's exit statuses are docs/cli.md's", "[docs][man]") {
  std::string expected;
  for (const std::string& line : CliPageBlock("exit-status")) {
    if (line.rfind("| ", 0) != 0 || line.rfind("| ---", 0) == 0) continue;
    const std::vector<std::string> cells = Cells(line);
    if (cells[0] == "status") continue;
    expected += (expected.empty() ? "" : " ") + cells[0] + " " + Unquoted(cells[1]);
  }
  REQUIRE(expected.rfind("0 ", 0) == 0);
  std::string shown;
  for (const std::string& line : Section("EXIT STATUS")) shown += line + "\n";
  CHECK(Words(shown) == Words(expected));
}

// Mutation caught: a macro the man macros do not define (".SS" misspelt ".SUBSECTION"), or
// text that groff reads as a request; groff -ww warns about either.
TEST_CASE("man -l renders the man page without a warning", "[docs][man]") {
  const Rendered& page = ManPage();
  INFO(page.err);
  CHECK(page.status == 0);
  CHECK(page.err.empty());
  CHECK(page.out.find("DEDUPSIM(1)") != std::string::npos);
}

// Mutation caught: an example whose command no longer runs (an option renamed, a scenario
// removed) left in the page.
TEST_CASE("the man page's examples run", "[docs][man]") {
  std::vector<std::vector<std::string>> commands;
  for (const std::string& line : Section("EXAMPLES")) {
    const std::string words = Words(line);
    if (line.rfind("       dedupsim ", 0) != 0) continue;
    std::vector<std::string> args;
    std::istringstream in(words.substr(std::string("dedupsim ").size()));
    for (std::string arg; in >> arg;) args.push_back(arg);
    commands.push_back(args);
  }
  REQUIRE(commands.size() >= 3);
  const std::vector<CliResult> results = RunCliEach(commands);
  for (size_t i = 0; i < commands.size(); ++i) {
    INFO(commands[i][0] << " " << (commands[i].size() > 1 ? commands[i][1] : "") << ": "
                        << results[i].err);
    CHECK(results[i].exit_code == 0);
    CHECK_FALSE(results[i].out.empty());
  }
}

}  // namespace man_page_test
