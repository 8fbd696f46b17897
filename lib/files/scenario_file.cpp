#include "files/scenario_file.h"

#include <dirent.h>
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>

#include "files/scenario_line.h"
#include "files/scenario_parts.h"
#include "files/toml_reader.h"

namespace dedupsim::files {

namespace {

std::string Stem(const std::string& path) {
  std::string stem = path;
  if (size_t slash = stem.find_last_of('/'); slash != std::string::npos)
    stem = stem.substr(slash + 1);
  if (size_t dot = stem.find('.'); dot != std::string::npos) stem = stem.substr(0, dot);
  return stem;
}

}  // namespace

ScenarioFile LoadScenarioFile(const std::string& path) {
  Document doc = Document::Parse(ReadWholeFile(path), path);
  const Value& root = doc.root();
  ScenarioFile file;
  file.path = path;
  file.name = Stem(path);
  std::optional<Value> consumers, messages, deliveries, figures, expect, line;
  for (const auto& [key, v] : root.Entries()) {
    if (key == "name") {
      file.name = v.String();
      if (!IsName(file.name)) throw v.Error("a name is one word in kebab-case, like my-lesson");
    } else if (key == "tag") {
      file.tag = v.String();
    } else if (key == "summary") {
      file.summary = v.String();
    } else if (key == "lesson") {
      file.lesson = v.String();
    } else if (key == "hook-points") {
      file.hook_points_text = v.String();
    } else if (key == "try-next") {
      file.try_next = v.String();
    } else if (key == "line") {
      line = v;
    } else if (key == "consumer") {
      consumers = v;
    } else if (key == "message") {
      messages = v;
    } else if (key == "deliver") {
      deliveries = v;
    } else if (key == "figure") {
      figures = v;
    } else if (key == "expect") {
      expect = v;
    } else {
      throw v.KeyError(fmt::format(
          "unknown key '{}' (expected name, tag, summary, lesson, hook-points, try-next, line, "
          "[[consumer]], [[message]], [[deliver]], [[figure]] tables and an [expect] table; "
          "keys of the file itself come before the first table)",
          key));
    }
  }
  if (file.tag.empty()) file.tag = file.name;
  if (!consumers) throw root.Error("no consumers: a lesson names at least one [[consumer]]");
  for (const Value& t : consumers->Items()) {
    if (!t.IsTable()) throw t.Error("each consumer is a table: [[consumer]] then its keys");
    ScenarioConsumer c = ReadConsumer(t, path);
    for (const ScenarioConsumer& other : file.consumers) {
      if (other.name == c.name) throw t.Error(fmt::format("consumer '{}' is named twice", c.name));
    }
    file.consumers.push_back(std::move(c));
  }
  if (messages) {
    for (const Value& t : messages->Items()) {
      if (!t.IsTable()) throw t.Error("each message is a table: [[message]] then its keys");
      ScenarioMessage m;
      m.at = t.position();
      for (const auto& [key, v] : t.Entries()) {
        if (key == "name") {
          m.name = v.String();
          if (!IsName(m.name)) throw v.Error("a message's name is one word, like order");
        } else if (key == "resend-of") {
          m.resend_of = file.messages[FindNamed(file.messages, v, "earlier [[message]]")].name;
        } else if (key == "new-id") {
          m.new_id = v.Bool();
        } else {
          throw v.KeyError(
              fmt::format("unknown key '{}' in [[message]] (expected name, "
                          "resend-of, new-id)",
                          key));
        }
      }
      if (m.name.empty()) throw t.Error("a [[message]] needs a name");
      if (m.new_id && m.resend_of.empty()) {
        throw t.Error("new-id goes with resend-of: a producer's resend of an earlier message");
      }
      for (const ScenarioMessage& other : file.messages) {
        if (other.name == m.name) throw t.Error(fmt::format("message '{}' is named twice", m.name));
      }
      file.messages.push_back(std::move(m));
    }
  }
  if (file.messages.empty()) file.messages.push_back({"order", root.position(), "", false});
  if (!deliveries) throw root.Error("no deliveries: a lesson has at least one [[deliver]]");
  for (const Value& t : deliveries->Items()) {
    if (!t.IsTable()) throw t.Error("each delivery is a table: [[deliver]] then its keys");
    file.deliveries.push_back(ReadDelivery(t, file));
  }
  std::vector<Value> sql_values;
  std::set<std::string> figure_names;
  if (!figures) throw root.Error("no figures: a lesson reads at least one [[figure]]");
  for (const Value& t : figures->Items()) {
    if (!t.IsTable()) throw t.Error("each figure is a table: [[figure]] then its keys");
    file.figures.push_back(ReadFigure(t, file));
    for (const auto& [key, v] : t.Entries()) {
      if (key == "sql") sql_values.push_back(v);
    }
    figure_names.insert(file.figures.back().name);
  }
  CheckFigureSql(file, sql_values);
  if (!line) throw root.Error("no line: say what to print, like line = \"reserved: {reserved}\"");
  file.line = line->String();
  file.line_at = TextStart(*line);
  CheckLine(file.line, file.line_at, figure_names);
  if (expect) {
    if (!expect->IsTable())
      throw expect->Error("expect is a table: [expect] then figure = \"expression\"");
    for (const auto& [key, v] : expect->Entries()) {
      if (figure_names.count(key) == 0) {
        throw v.KeyError(fmt::format("expect names no figure '{}' (expected one of {})", key,
                                     JoinOr({figure_names.begin(), figure_names.end()}, "none")));
      }
      ScenarioExpectation e{key, v.position(), ReadExpression(v)};
      CheckNames(e.value, figure_names, false);
      // A figure checked against itself always holds: a --check that could never fail.
      for (const auto& [name, at] : e.value.Names()) {
        if (name == key && !IsOptionName(name)) {
          throw ErrorAt(at, fmt::format("expect {} names the figure it checks ('{}'): it would "
                                        "hold whatever the run did; write what the lesson "
                                        "expects from the options (quantity, deliveries, ...) "
                                        "or other figures, in: {}",
                                        key, name, e.value.text()));
        }
      }
      file.expectations.push_back(std::move(e));
    }
  }
  for (const ScenarioDelivery& d : file.deliveries) {
    if (d.fault && d.fault->kind == Fault::Kind::kCrash) file.traits |= kHasCrash;
    if (d.race) file.traits |= kHasHold | kHasInstances;
    for (const auto& [name, at] : d.copies.Names()) {
      if (name == "deliveries") file.traits |= kRepeatsDelivery;
    }
  }
  return file;
}

std::vector<std::string> ScenarioFilesIn(const std::string& folder) {
  DIR* dir = ::opendir(folder.c_str());
  if (dir == nullptr) throw FileError(fmt::format("{}: cannot be read as a folder", folder));
  std::vector<std::string> paths;
  while (const dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".toml") == 0 && name[0] != '.') {
      paths.push_back(folder + (folder.back() == '/' ? "" : "/") + name);
    }
  }
  ::closedir(dir);
  std::sort(paths.begin(), paths.end());
  if (paths.empty()) throw FileError(fmt::format("{}: holds no scenario file (*.toml)", folder));
  return paths;
}

}  // namespace dedupsim::files
