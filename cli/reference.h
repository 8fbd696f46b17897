// The command line described from its own definitions. DescribeCli walks the CLI11 app
// (every command and option as defined, never a list kept by hand) into one description;
// docs/cli.md's Reference, the man page dedupsim(1) and shell completion are views of it, so
// an option added to a command reaches all three without an edit to any of them.
//
// Hidden things are left out: an option or a command in no group (CLI11's group("")), and
// --help. Nothing here runs a command or touches a file.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace dedupsim::cli {

struct OptionDoc {
  std::string name;  // "--quantity"; a positional's name in capitals ("SCENARIOS")
  bool positional = false;
  bool flag = false;         // takes no value
  bool many = false;         // takes any number of values (a positional list)
  std::string value;         // the value as --help shows it ("INT:1..1000000", "TEXT:{a,b}")
  std::string default_text;  // what its variable held before parsing; "" when none
  bool required = false;
  // run: the lessons that take the option, as a kind ("lessons with a crash point"), when
  // only some do; "" when every lesson does. Never a list of names: a lesson added leaves
  // the reference as it was (the lesson's page and `explain` say the options it takes).
  std::string lessons;
  std::string meaning;
};

struct CommandDoc {
  std::string name;
  std::string description;
  bool by_scenario = false;  // run: some options are for some scenarios only
  std::string footer;        // said after the options (run: where to read a lesson's options)
  std::vector<OptionDoc> options;
};

struct CliDoc {
  std::string description;        // the app's ("dedupsim: a teaching simulator ...")
  std::vector<OptionDoc> global;  // the options before the command (--color, --version)
  std::vector<CommandDoc> commands;
};

// The app as defined (every command must be, with CaptureDefaults applied).
CliDoc DescribeCli(const CLI::App& app);

// What an option's value may be, read from its --help value ("TEXT:{text,json}": those
// words; "FILE..." or PATH: a file; "DIR": a folder; "SCENARIO": a scenario name; a word in
// lower case: that word, as in "SCENARIO|all|everything").
struct ValueChoices {
  std::vector<std::string> words;
  bool files = false;
  bool folders = false;
  bool scenarios = false;
};
ValueChoices ChoicesOf(const OptionDoc& option);

// docs/cli.md's Reference: a table of the global options, then per command its
// description, a table of its options (value, default, the lessons that take it for run,
// meaning) and its footer.
std::string MarkdownReference(const CliDoc& doc);

// docs/cli.md's Exit status table, from the program's table of statuses.
std::string MarkdownExitStatus();

// The whole man page dedupsim(1), in roff (man macros), for this version.
std::string ManPage(const CliDoc& doc, const std::string& version);

}  // namespace dedupsim::cli
