// dedupsim __complete WORD...: hidden, for the shell completion scripts (cli/shell/). The
// words are those typed after `dedupsim`, the last being the one to complete (empty after
// a space). Prints what may go there: a first line saying how the shell completes it
// ("words", "files" or "folders"), then for "words" each candidate that starts with what
// was typed, one a line. Every candidate comes from the command definitions (reference.h:
// commands, options, the values an option's --help shows) and the scenario table, so a new
// command, option, value or lesson completes without an edit to the scripts. It runs
// nothing and touches no file.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "exit_status.h"
#include "reference.h"
#include "scenarios.h"

namespace dedupsim::cli {

namespace {

struct Completion {
  std::string kind = "words";  // "words", "files" or "folders"
  std::vector<std::string> words;
};

bool StartsWith(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

const OptionDoc* FindOption(const std::vector<OptionDoc>& options, const std::string& name) {
  for (const OptionDoc& option : options) {
    if (!option.positional && option.name == name) return &option;
  }
  return nullptr;
}

// What may be given as option's value.
Completion ValuesOf(const OptionDoc& option) {
  Completion c;
  const ValueChoices choices = ChoicesOf(option);
  if (choices.files) {
    c.kind = "files";
  } else if (choices.folders) {
    c.kind = "folders";
  } else {
    if (choices.scenarios) {
      for (const Scenario* s : AllScenarios()) c.words.emplace_back(s->name);
    }
    c.words.insert(c.words.end(), choices.words.begin(), choices.words.end());
  }
  return c;
}

Completion OptionNames(const std::vector<OptionDoc>& options) {
  Completion c;
  for (const OptionDoc& option : options) {
    if (!option.positional) c.words.push_back(option.name);
  }
  c.words.emplace_back("--help");
  return c;
}

Completion Complete(const CliDoc& doc, std::vector<std::string> words, std::string* prefix_out,
                    std::string* typed_out) {
  std::string typed = words.empty() ? "" : words.back();
  if (!words.empty()) words.pop_back();
  // Bash splits "--backend=po" at '=' (COMP_WORDBREAKS): "--backend" "=" "po", or
  // "--backend" "=" while the value is still empty. Another shell passes it whole.
  const OptionDoc* value_of = nullptr;
  std::string value_option;
  if (typed == "=" && !words.empty()) {
    value_option = words.back();
    typed.clear();
  } else if (words.size() >= 2 && words.back() == "=") {
    value_option = words[words.size() - 2];
  } else if (StartsWith(typed, "--") && typed.find('=') != std::string::npos) {
    const size_t eq = typed.find('=');
    value_option = typed.substr(0, eq);
    *prefix_out = typed.substr(0, eq + 1);
    typed = typed.substr(eq + 1);
  }

  // Walk the words before: the command, and how many positional values it has.
  const CommandDoc* command = nullptr;
  const std::vector<OptionDoc>* scope = &doc.global;
  size_t positionals = 0;
  bool only_positionals = false;
  const OptionDoc* expecting = nullptr;  // an option whose value comes next
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (expecting != nullptr) {
      expecting = nullptr;
      if (w == "=" && i + 1 < words.size()) ++i;  // "--backend" "=" "postgres"
      continue;
    }
    if (!only_positionals && w == "--") {
      only_positionals = true;
    } else if (!only_positionals && StartsWith(w, "-")) {
      const std::string name = w.substr(0, w.find('='));
      const OptionDoc* option = FindOption(*scope, name);
      if (option != nullptr && !option->flag && w.find('=') == std::string::npos)
        expecting = option;
    } else if (command == nullptr) {
      for (const CommandDoc& c : doc.commands) {
        if (c.name == w) command = &c;
      }
      if (command != nullptr) scope = &command->options;
    } else {
      ++positionals;
    }
  }
  if (value_option.empty() && expecting != nullptr) value_of = expecting;
  if (!value_option.empty()) value_of = FindOption(*scope, value_option);
  *typed_out = typed;

  if (value_of != nullptr) return ValuesOf(*value_of);
  if (!value_option.empty()) return {};  // an option this command does not have
  if (!only_positionals && StartsWith(typed, "-")) return OptionNames(*scope);
  if (command == nullptr) {
    Completion c;
    for (const CommandDoc& d : doc.commands) c.words.push_back(d.name);
    return c;
  }
  for (const OptionDoc& option : command->options) {
    if (!option.positional) continue;
    if (option.many || positionals == 0) return ValuesOf(option);
    positionals -= 1;
  }
  // No positional left to fill: the options, once something is asked for.
  return typed.empty() ? OptionNames(*scope) : Completion{};
}

}  // namespace

Command AddCompleteCommand(CLI::App& app) {
  auto* sub = app.add_subcommand("__complete", "Complete a command line (for the shell)");
  // Every word after __complete is the line being typed, "--help" included: none is parsed.
  sub->set_help_flag();
  sub->prefix_command();
  CLI::App* root = &app;
  return {sub, [sub, root]() -> int {
            std::string prefix, typed;
            const Completion c = Complete(DescribeCli(*root), sub->remaining(), &prefix, &typed);
            fmt::print("{}\n", c.kind);
            for (const std::string& word : c.words) {
              if (StartsWith(word, typed)) fmt::print("{}{}\n", prefix, word);
            }
            return kExitOk;
          }};
}

}  // namespace dedupsim::cli
