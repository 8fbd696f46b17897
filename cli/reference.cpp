#include "reference.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>

#include "exit_status.h"
#include "lesson/options.h"
#include "lesson/runner.h"

namespace dedupsim::cli {

namespace {

bool Hidden(const CLI::Option* option) {
  return option->get_group().empty() || option->get_name() == "--help";
}

OptionDoc Describe(const CLI::Option* option, bool by_scenario) {
  OptionDoc doc;
  doc.positional = !option->nonpositional();
  if (doc.positional) {
    for (char c : option->get_name())
      doc.name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  } else {
    doc.name = option->get_name(false, true);
  }
  doc.value = option->get_type_name();
  doc.flag = doc.value.empty();
  doc.many = doc.positional && option->get_items_expected_max() > 1;
  // --version is a flag whose "default" is no state at all.
  if (!doc.flag) doc.default_text = option->get_default_str();
  doc.required = option->get_required();
  doc.meaning = option->get_description();
  if (by_scenario) {
    if (const LessonOption* only = FindLessonOption(option->get_name()); only && only->trait) {
      // The lessons have a column (a line in the man page) of their own: the meaning is
      // --help's without them.
      doc.lessons = only->lessons;
      doc.meaning = LessonOptionMeaning(*only);
    }
  }
  return doc;
}

// A table cell: pipes escaped, line breaks as spaces.
std::string Cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else {
      out += c == '\n' ? ' ' : c;
    }
  }
  return out;
}

// The default column: "off" for a flag, "required", the value, or "none".
std::string MarkdownDefault(const OptionDoc& option) {
  if (option.flag) return option.name == "--version" ? "none" : "off";
  if (option.required) return "required";
  return option.default_text.empty() ? "none" : "`" + option.default_text + "`";
}

std::vector<std::string> Split(const std::string& text, char by) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(by, start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

bool IsLower(const std::string& word) {
  return !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || c == '-';
  });
}

// roff text: backslashes and hyphens escaped (a hyphen is a minus, so an option copied from
// the page is typed as shown), quotes as the ASCII characters, and a line that would start
// with a control character (. or ') guarded.
std::string Roff(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '\\':
        out += "\\e";
        break;
      case '-':
        out += "\\-";
        break;
      case '\'':
        out += "\\(aq";
        break;
      case '`':
        out += "\\(ga";
        break;
      case '\n':
        out += ' ';
        break;
      default:
        out += c;
    }
  }
  if (!out.empty() && out[0] == '.') out = "\\&" + out;
  return out;
}

// roff text from the exit-status table's markup: `code` in bold, the rest as Roff.
std::string RoffMarked(const std::string& text) {
  std::string out;
  bool code = false;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '`') {
      out += Roff(text.substr(start, i - start));
      if (i < text.size()) out += code ? "\\fR" : "\\fB";
      code = !code;
      start = i + 1;
    }
  }
  return out;
}

// Text ending as a sentence does.
std::string Sentence(const std::string& text) {
  return !text.empty() && text.back() == '.' ? text : text + ".";
}

// An option's value in roff: may break after a comma or a bar, so a long list of values
// ({naive,check-then-process,...}) wraps instead of running past the margin.
std::string RoffValue(const std::string& value) {
  std::string out;
  for (char c : Roff(value)) {
    out += c;
    if (c == ',' || c == '|') out += "\\:";
  }
  return out;
}

// An option's entry in the man page: a tagged paragraph, the tag the name and the value.
std::string ManOption(const OptionDoc& option) {
  std::string out = ".TP\n";
  out +=
      option.positional ? "\\fI" + Roff(option.name) + "\\fR" : "\\fB" + Roff(option.name) + "\\fR";
  if (!option.flag) out += " \\fI" + RoffValue(option.value) + "\\fR";
  out += "\n" + Roff(option.meaning) + "\n";
  if (option.required) {
    out += ".br\nRequired.\n";
  } else if (!option.flag && !option.default_text.empty()) {
    out += ".br\nDefault: " + Roff(option.default_text) + ".\n";
  }
  if (!option.lessons.empty()) out += ".br\nTaken by: " + Roff(option.lessons) + ".\n";
  return out;
}

// The synopsis of a command: its positionals, then [options] when it has any.
std::string ManSynopsis(const CommandDoc& command) {
  std::string out = "\\fBdedupsim " + Roff(command.name) + "\\fR";
  bool options = false;
  for (const OptionDoc& option : command.options) {
    if (!option.positional) {
      options = true;
      continue;
    }
    std::string word = "\\fI" + Roff(option.name) + "\\fR" + (option.many ? "..." : "");
    out += option.required ? " " + word : " [" + word + "]";
  }
  if (options) out += " [\\fIoptions\\fR]";
  return out;
}

// Commands shown in EXAMPLES: each is also run by the test suite, which fails when one no
// longer runs.
struct Example {
  const char* command;
  const char* what;
};
constexpr Example kExamples[] = {
    {"dedupsim run all", "The reference post's six scenarios, one line each."},
    {"dedupsim list", "Every scenario, its tag and what it shows."},
    {"dedupsim explain concurrent", "The lesson of one scenario and what to try next."},
    {"dedupsim run concurrent --hold-ms 0 --trace",
     "The same scenario with other options: the figures follow, and every step is shown."},
    {"dedupsim run naive --format json", "One JSON object per scenario, for scripts."},
};

}  // namespace

CliDoc DescribeCli(const CLI::App& app_const) {
  // CLI11's getters for options and subcommands are not all const.
  auto& app = const_cast<CLI::App&>(app_const);
  CliDoc doc;
  doc.description = app.get_description();
  for (const CLI::Option* option : app.get_options()) {
    if (!Hidden(option)) doc.global.push_back(Describe(option, false));
  }
  for (CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_group().empty()) continue;  // a hidden command (__complete, __man)
    CommandDoc command;
    command.name = sub->get_name();
    command.description = sub->get_description();
    // Only run takes scenario names, and some of its options only some scenarios take.
    command.by_scenario = command.name == "run";
    for (const CLI::Option* option : sub->get_options()) {
      if (!Hidden(option)) command.options.push_back(Describe(option, command.by_scenario));
    }
    // The command's own footer: what it says before the exit statuses, which every
    // command's footer ends with (the Exit status section has them).
    command.footer = sub->get_footer();
    const std::string common = app.get_footer();
    if (command.footer.size() >= common.size() &&
        command.footer.compare(command.footer.size() - common.size(), common.size(), common) == 0) {
      command.footer.resize(command.footer.size() - common.size());
    }
    while (!command.footer.empty() && std::isspace(static_cast<unsigned char>(command.footer.back())))
      command.footer.pop_back();
    doc.commands.push_back(std::move(command));
  }
  return doc;
}

ValueChoices ChoicesOf(const OptionDoc& option) {
  ValueChoices choices;
  if (option.flag) return choices;
  // "TYPE:VALIDATOR:...": the type's words split at '|', each validator a set or a kind.
  std::vector<std::string> parts = Split(option.value, ':');
  for (const std::string& word : Split(parts[0], '|')) {
    if (word.rfind("FILE", 0) == 0 || word == "PATH") choices.files = true;
    if (word == "DIR") choices.folders = true;
    if (word == "SCENARIO") choices.scenarios = true;
    if (IsLower(word)) choices.words.push_back(word);
  }
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string& v = parts[i];
    if (v.size() > 2 && v.front() == '{' && v.back() == '}') {
      for (const std::string& word : Split(v.substr(1, v.size() - 2), ','))
        choices.words.push_back(word);
    } else if (v.rfind("PATH", 0) == 0 || v.rfind("FILE", 0) == 0) {
      choices.files = true;
    } else if (v.rfind("DIR", 0) == 0) {
      choices.folders = true;
    }
  }
  return choices;
}

std::string MarkdownReference(const CliDoc& doc) {
  std::string out;
  out += "| global option | value | default | meaning |\n| --- | --- | --- | --- |\n";
  for (const OptionDoc& option : doc.global) {
    out += fmt::format("| `{}` | {} | {} | {} |\n", option.name,
                       Cell(option.flag ? "flag" : option.value), MarkdownDefault(option),
                       Cell(option.meaning));
  }
  for (const CommandDoc& command : doc.commands) {
    out += fmt::format("\n### dedupsim {}\n\n{}\n\n", command.name, command.description);
    out += command.by_scenario
               ? "| option | value | default | taken by | meaning |\n"
                 "| --- | --- | --- | --- | --- |\n"
               : "| option | value | default | meaning |\n| --- | --- | --- | --- |\n";
    for (const OptionDoc& option : command.options) {
      out += fmt::format("| `{}` | {} | {} |", option.name,
                         Cell(option.flag ? "flag" : option.value), MarkdownDefault(option));
      if (command.by_scenario) {
        out += fmt::format(" {} |", option.lessons.empty() ? "all lessons" : Cell(option.lessons));
      }
      out += fmt::format(" {} |\n", Cell(option.meaning));
    }
    if (!command.footer.empty()) out += "\n" + command.footer + "\n";
  }
  return out;
}

std::string MarkdownExitStatus() {
  std::string out = "| status | meaning |\n| --- | --- |\n";
  for (const ExitStatusMeaning& status : kExitStatusMeanings) {
    out += fmt::format("| {} | {} |\n", status.code, Cell(status.detail));
  }
  return out;
}

std::string ManPage(const CliDoc& doc, const std::string& version) {
  std::string what = doc.description;
  if (what.rfind("dedupsim: ", 0) == 0) what = what.substr(10);
  std::string out;
  out +=
      ".\\\" dedupsim(1): generated by `dedupsim __man` from the program's own command\n"
      ".\\\" definitions, as docs/cli.md's Reference is. Do not edit.\n";
  out += fmt::format(".TH DEDUPSIM 1 \"\" \"dedupsim {}\" \"User Commands\"\n", Roff(version));
  // No hyphenation and a ragged right margin: option names and values stay whole.
  out += ".nh\n.ad l\n";
  out += ".SH NAME\ndedupsim \\- " + Roff(what) + "\n";

  out += ".SH SYNOPSIS\n.nf\n\\fBdedupsim\\fR";
  for (const OptionDoc& option : doc.global) {
    if (option.flag) continue;
    out += " [\\fB" + Roff(option.name) + "\\fR \\fI" + RoffValue(option.value) + "\\fR]";
  }
  out += " \\fICOMMAND\\fR ...\n";
  std::string flags;
  for (const OptionDoc& option : doc.global) {
    if (option.flag) flags += " | \\fB" + Roff(option.name) + "\\fR";
  }
  out += "\\fBdedupsim \\-\\-help\\fR" + flags + "\n";
  for (const CommandDoc& command : doc.commands) out += ManSynopsis(command) + "\n";
  out += ".fi\n";

  out += ".SH DESCRIPTION\n\\fBdedupsim\\fR is " + Roff(Sentence(what)) + "\n";
  out +=
      "Each lesson is a named scenario that runs real consumers against a real database "
      "(a SQLite file, or PostgreSQL with \\fB\\-\\-backend postgres\\fR) and prints one line "
      "of figures read back from the database or measured while it ran.\n"
      "\\fBdedupsim list\\fR names the scenarios, \\fBdedupsim explain\\fR tells one\\(aqs "
      "lesson, and every command takes \\fB\\-\\-help\\fR.\n";

  out += ".SH OPTIONS\nBefore the command:\n";
  for (const OptionDoc& option : doc.global) out += ManOption(option);

  out += ".SH COMMANDS\n";
  for (const CommandDoc& command : doc.commands) {
    out += ".SS \"dedupsim " + Roff(command.name) + "\"\n" + Roff(Sentence(command.description)) +
           "\n";
    for (const OptionDoc& option : command.options) out += ManOption(option);
    if (!command.footer.empty()) out += ".PP\n" + Roff(command.footer) + "\n";
  }

  out += ".SH EXIT STATUS\n";
  for (const ExitStatusMeaning& status : kExitStatusMeanings) {
    out += fmt::format(".TP\n\\fB{}\\fR\n{}\n", status.code, RoffMarked(status.detail));
  }

  out += ".SH EXAMPLES\n";
  for (const Example& example : kExamples) {
    out += ".TP\n\\fB" + Roff(example.command) + "\\fR\n" + Roff(example.what) + "\n";
  }

  out +=
      ".SH FILES\n.TP\n\\fIshare/doc/dedupsim/examples/\\fR\n"
      "Under the installation prefix (\\fI/usr\\fR for the Debian package): consumers written "
      "as files, for \\fBdedupsim check\\fR, and lessons written as files, for "
      "\\fBdedupsim run \\-\\-file\\fR.\n";
  out += ".SH SEE ALSO\n.BR sqlite3 (1),\n.BR psql (1)\n";
  return out;
}

}  // namespace dedupsim::cli
