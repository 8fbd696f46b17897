// Reading the tables of a scenario file (files/scenario_file.h): a [[consumer]] (a built-in
// row of the explorer or a consumer file), a fault at a hook point, a [[deliver]], a
// [[figure]] (its SQL checked in the sandbox on a scratch database), an expression. Private
// to lib/files: LoadScenarioFile reads the file's keys and hands each table here.
//
// Every reader only reads, and throws FileError at the value's FILE:LINE:COLUMN for
// anything wrong; what a table names (a message, a consumer) must already be in the file.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "files/scenario_file.h"
#include "files/toml_reader.h"

namespace dedupsim::files {

// quantity, deliveries, holdMs, staggerMs, crashMode, instances: the run's options an
// expression may name.
bool IsOptionName(std::string_view name);
// One word: a letter, then letters, digits, _ and -.
bool IsName(std::string_view s);
// Where a one-line string's text starts: one column after its opening quote.
Position TextStart(const Value& v);
// "a, b, c", or none when names is empty.
std::string JoinOr(const std::vector<std::string>& names, const char* none);

// A [[consumer]] table; scenario_path is the file naming it (a consumer file is found
// relative to it).
ScenarioConsumer ReadConsumer(const Value& table, const std::string& scenario_path);
// A [[deliver]] table, over the messages and consumers already read into file.
ScenarioDelivery ReadDelivery(const Value& table, const ScenarioFile& file);
// A [[figure]] table; its SQL is checked later, by CheckFigureSql.
ScenarioFigure ReadFigure(const Value& table, const ScenarioFile& file);
// An expression from a string, or a literal integer or boolean.
Expression ReadExpression(const Value& v);
// Every name e uses is an option (or, unless options_only, one of figures).
void CheckNames(const Expression& e, const std::set<std::string>& figures, bool options_only);
// Checks each SQL figure in the sandbox on a scratch dedupsim database with every
// consumer's tables: one statement that only reads, naming only the figures' parameters.
// sql_values are the figures' sql values, in order; sets each figure's sql_at and rules.
void CheckFigureSql(ScenarioFile& file, const std::vector<Value>& sql_values);

// The index of the item named v's string; throws at v naming the ones there are.
template <typename T>
size_t FindNamed(const std::vector<T>& items, const Value& v, const char* what) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].name == v.String()) return i;
  }
  std::vector<std::string> names;
  for (const T& item : items) names.push_back(item.name);
  throw v.Error(fmt::format("no {} named '{}' (expected one of {})", what, v.String(),
                            JoinOr(names, "none")));
}

}  // namespace dedupsim::files
