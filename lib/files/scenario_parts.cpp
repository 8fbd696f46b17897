#include "files/scenario_parts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "consumers/registry.h"
#include "core/duration.h"
#include "explore/strategies.h"
#include "store/sql_text.h"
#include "store/untrusted_sql.h"

namespace dedupsim::files {

namespace {

constexpr const char* kOptionNames[] = {"quantity",  "deliveries", "holdMs",
                                        "staggerMs", "crashMode",  "instances"};
constexpr const char* kOutcomes =
    "processed, skipped, needs-reconciliation, failed, crashed, waited";
constexpr const char* kFigureParameters = ":BookId, :OrderId, :MessageId, :Quantity";

std::string Folder(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

// "500ms", or what ParseDuration reads ("2s", "1m").
std::optional<std::chrono::milliseconds> Milliseconds(std::string_view text) {
  if (text.size() > 2 && text.substr(text.size() - 2) == "ms") {
    std::string_view digits = text.substr(0, text.size() - 2);
    if (digits.size() > 6 || !std::all_of(digits.begin(), digits.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        })) {
      return std::nullopt;
    }
    return std::chrono::milliseconds(std::stoll(std::string(digits)));
  }
  return ParseDuration(text);
}

constexpr const char* kDurations = "a duration like 500ms, 2s or 1m";

std::chrono::milliseconds ReadDuration(const Value& v) {
  std::optional<std::chrono::milliseconds> d = Milliseconds(v.String());
  if (!d) throw v.Error(fmt::format("{} = \"{}\" is not {}", v.key(), v.String(), kDurations));
  if (*d > std::chrono::minutes(1)) throw v.Error(fmt::format("{} is at most 1m", v.key()));
  return *d;
}

// Hook points a built-in passes: its crash points that are hooks (CamelCase words), not
// statements ("UPDATE StockItems", "BEGIN") or the provider ("EmailProvider.Send").
std::vector<std::string> BuiltinHookPoints(const explore::Strategy& s) {
  std::vector<std::string> hooks;
  for (std::string_view p : s.crash_points) {
    bool lower = std::any_of(p.begin(), p.end(),
                             [](char c) { return std::islower(static_cast<unsigned char>(c)); });
    if (lower && p.find(' ') == std::string_view::npos && p.find('.') == std::string_view::npos) {
      hooks.emplace_back(p);
    }
  }
  return hooks;
}

}  // namespace

bool IsOptionName(std::string_view name) {
  return std::find(std::begin(kOptionNames), std::end(kOptionNames), name) !=
         std::end(kOptionNames);
}

bool IsName(std::string_view s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

Position TextStart(const Value& v) {
  Position p = v.position();
  p.column += 1;
  return p;
}

std::string JoinOr(const std::vector<std::string>& names, const char* none) {
  if (names.empty()) return none;
  return fmt::format("{}", fmt::join(names, ", "));
}

ScenarioConsumer ReadConsumer(const Value& table, const std::string& scenario_path) {
  ScenarioConsumer c;
  c.at = table.position();
  std::optional<Value> builtin;
  std::optional<Value> file;
  for (const auto& [key, v] : table.Entries()) {
    if (key == "name") {
      c.name = v.String();
      if (!IsName(c.name)) throw v.Error("a consumer's name is one word, like inventory");
    } else if (key == "builtin") {
      builtin = v;
    } else if (key == "file") {
      file = v;
    } else {
      throw v.KeyError(
          fmt::format("unknown key '{}' in [[consumer]] (expected name, and builtin "
                      "or file)",
                      key));
    }
  }
  if (builtin.has_value() == file.has_value()) {
    throw table.Error(
        "a [[consumer]] names either builtin = \"inbox\" (a row of dedupsim explore) "
        "or file = \"../consumers/inbox.toml\" (a consumer file), exactly one");
  }
  if (builtin) {
    // The registry of consumers says what a name means; its explorer row is what runs.
    const ConsumerEntry* entry = FindConsumer(builtin->String());
    if (entry == nullptr) {
      throw builtin->Error(fmt::format("unknown built-in consumer '{}' (expected one of {})",
                                       builtin->String(), ConsumerNames()));
    }
    c.builtin = &explore::StrategyOf(*entry);
    c.hook_points = BuiltinHookPoints(*c.builtin);
    if (c.name.empty()) c.name = std::string(c.builtin->name);
  } else {
    std::string path = file->String();
    if (path.empty() || path[0] != '/') path = Folder(scenario_path) + path;
    // Its own errors name its own file at their line; one about the file as a whole (missing,
    // a directory, a device, too large) is told where the scenario names it.
    std::optional<ConsumerFile> loaded;
    try {
      loaded.emplace(LoadConsumerFile(path));
    } catch (const FileError& e) {
      const std::string what = e.what();
      if (what.rfind(path + ": ", 0) != 0) throw;
      throw file->Error(fmt::format("consumer file {}", what));
    }
    ConsumerFile consumer = std::move(*loaded);
    for (const Step& s : consumer.steps) {
      if (s.kind == Step::Kind::kHook) c.hook_points.push_back(s.name);
    }
    if (c.name.empty()) c.name = consumer.name;
    c.file = std::make_shared<FileStrategy>(std::move(consumer));
  }
  return c;
}

Fault ReadFault(const Value& v, const ScenarioConsumer& consumer) {
  const std::string& text = v.String();
  Fault fault;
  fault.at = TextStart(v);
  std::vector<std::string> words;
  for (size_t i = 0; i < text.size();) {
    size_t end = text.find(' ', i);
    if (end == std::string::npos) end = text.size();
    if (end > i) words.push_back(text.substr(i, end - i));
    i = end + 1;
  }
  const char* expected = "expected \"hold 500ms at BeforeCommit\" or \"crash at AfterSend\"";
  if (words.size() == 3 && words[0] == "crash" && words[1] == "at") {
    fault.kind = Fault::Kind::kCrash;
    fault.point = words[2];
  } else if (words.size() == 4 && words[0] == "hold" && words[2] == "at") {
    fault.kind = Fault::Kind::kHold;
    std::optional<std::chrono::milliseconds> d = Milliseconds(words[1]);
    if (!d) throw v.Error(fmt::format("fault: '{}' is not {}; {}", words[1], kDurations, expected));
    if (*d > std::chrono::minutes(1)) throw v.Error("fault: a hold is at most 1m");
    fault.hold = *d;
    fault.point = words[3];
  } else {
    throw v.Error(fmt::format("unknown fault '{}' ({})", text, expected));
  }
  if (std::find(consumer.hook_points.begin(), consumer.hook_points.end(), fault.point) ==
      consumer.hook_points.end()) {
    throw v.Error(fmt::format("consumer '{}' passes no hook point {} (its hook points: {})",
                              consumer.name, fault.point, JoinOr(consumer.hook_points, "none")));
  }
  return fault;
}

Expression ReadExpression(const Value& v) {
  if (v.IsString()) return Expression::Parse(v.String(), TextStart(v));
  if (v.IsArray() || v.IsTable()) {
    throw v.Error(
        fmt::format("{} is an expression in quotes, like \"quantity * 2\" or \"[true, "
                    "false]\"",
                    v.key()));
  }
  std::string text;
  try {
    text = fmt::format("{}", v.Int());
  } catch (const FileError&) {
    text = v.Bool() ? "true" : "false";
  }
  return Expression::Parse(text, v.position());
}

void CheckNames(const Expression& e, const std::set<std::string>& figures, bool options_only) {
  for (const auto& [name, at] : e.Names()) {
    if (IsOptionName(name)) continue;
    if (!options_only && figures.count(name) > 0) continue;
    throw ErrorAt(at, fmt::format("unknown name '{}' (expected {}{}) in: {}", name,
                                  options_only ? "" : "a figure of this file or ",
                                  "an option: quantity, deliveries, holdMs, staggerMs, "
                                  "crashMode, instances",
                                  e.text()));
  }
}

ScenarioDelivery ReadDelivery(const Value& table, const ScenarioFile& file) {
  ScenarioDelivery d;
  d.at = table.position();
  std::optional<Value> fault;
  bool copies_given = false;
  for (const auto& [key, v] : table.Entries()) {
    if (key == "message") {
      d.message = FindNamed(file.messages, v, "[[message]]");
    } else if (key == "to") {
      d.consumer = FindNamed(file.consumers, v, "[[consumer]]");
    } else if (key == "copies") {
      d.copies = ReadExpression(v);
      CheckNames(d.copies, {}, true);
      copies_given = true;
    } else if (key == "race") {
      d.race = v.Bool();
    } else if (key == "fault") {
      fault = v;
    } else if (key == "stagger") {
      d.stagger = ReadDuration(v);
    } else if (key == "delay") {
      d.delay = ReadDuration(v);
    } else if (key == "instance") {
      d.instance = v.String();
      if (!IsName(d.instance)) throw v.Error("an instance is one word, like A");
    } else {
      throw v.KeyError(
          fmt::format("unknown key '{}' in [[deliver]] (expected message, to, "
                      "copies, race, fault, stagger, delay, instance)",
                      key));
    }
  }
  if (!copies_given) d.copies = Expression::Parse("1", table.position());
  if (fault) d.fault = ReadFault(*fault, file.consumers[d.consumer]);
  if (d.race) {
    if (copies_given)
      throw table.Error(
          "a race is always two copies at once (instances A and B); leave copies out");
    if (!d.fault || d.fault->kind != Fault::Kind::kHold) {
      throw table.Error(
          "a race needs fault = \"hold 500ms at POINT\": where instance A holds "
          "while B starts");
    }
    if (!d.instance.empty())
      throw table.Error("a race's instances are A and B; leave instance out");
  }
  return d;
}

ScenarioFigure ReadFigure(const Value& table, const ScenarioFile& file) {
  ScenarioFigure f;
  f.at = table.position();
  std::optional<Value> consumer;
  int kinds = 0;
  for (const auto& [key, v] : table.Entries()) {
    if (key == "name") {
      f.name = v.String();
      if (!IsName(f.name) || f.name.find('-') != std::string::npos) {
        throw v.Error("a figure's name is one word in camelCase, like reserved or emailsSent");
      }
      if (IsOptionName(f.name))
        throw v.Error(fmt::format("'{}' is an option's name; pick another", f.name));
    } else if (key == "sql") {
      f.kind = ScenarioFigure::Kind::kSql;
      f.sql = v.String();
      ++kinds;
    } else if (key == "count" || key == "each") {
      f.kind = key == "count" ? ScenarioFigure::Kind::kCount : ScenarioFigure::Kind::kEach;
      f.outcome = v.String();
      static const std::set<std::string> kCountable = {
          "processed", "skipped", "needs-reconciliation", "failed",
          "crashed",   "waited",  "deliveries",           "emails"};
      const bool ok = kCountable.count(f.outcome) > 0 &&
                      (key == "count" || (f.outcome != "deliveries" && f.outcome != "emails"));
      if (!ok) {
        throw v.Error(fmt::format("{} = \"{}\" is not something deliveries do (expected {}{})", key,
                                  f.outcome, kOutcomes,
                                  key == "count" ? ", deliveries, emails" : ""));
      }
      ++kinds;
    } else if (key == "consumer") {
      consumer = v;
    } else {
      throw v.KeyError(
          fmt::format("unknown key '{}' in [[figure]] (expected name, and one of "
                      "sql, count, each; consumer with count or each)",
                      key));
    }
  }
  if (f.name.empty()) throw table.Error("a [[figure]] needs a name");
  if (kinds != 1) {
    throw table.Error(
        "a [[figure]] is one of sql = \"SELECT ...\", count = \"processed\", "
        "each = \"processed\"");
  }
  for (const ScenarioFigure& other : file.figures) {
    if (other.name == f.name) throw table.Error(fmt::format("figure '{}' is named twice", f.name));
  }
  if (consumer) {
    if (f.kind == ScenarioFigure::Kind::kSql || f.outcome == "emails") {
      throw consumer->KeyError("consumer = ... narrows a count or each of deliveries only");
    }
    f.consumer = file.consumers[FindNamed(file.consumers, *consumer, "[[consumer]]")].name;
  }
  return f;
}

void CheckFigureSql(ScenarioFile& file, const std::vector<Value>& sql_values) {
  const std::unique_ptr<UntrustedSqlChecker> scratch = UntrustedSqlChecker::NewScratch();
  for (const ScenarioConsumer& c : file.consumers) {
    if (const char* schema = c.strategy().tables.schema) {
      scratch->RunSchema(schema, c.file ? c.file->file().tables : std::vector<std::string>{});
    }
  }
  size_t n = 0;
  for (ScenarioFigure& f : file.figures) {
    if (f.kind != ScenarioFigure::Kind::kSql) continue;
    const Value& v = sql_values[n++];
    CheckedSql checked;
    try {
      checked = scratch->CheckOne(f.sql, SqlUse::kFigure);
    } catch (const SqlRefused& e) {
      throw v.TextError(e.offset(),
                        fmt::format("figure '{}': {} (in: {})", f.name, e.what(), e.statement()));
    }
    f.sql_at = v.TextPosition(checked.begin);
    f.rules = checked.rules;
    f.parameters = checked.parameters;
    for (const std::string& name : checked.parameters) {
      if (name != ":BookId" && name != ":OrderId" && name != ":MessageId" && name != ":Quantity") {
        const size_t at = FindSqlParameter(f.sql, name, checked.begin);
        throw v.TextError(at == std::string::npos ? checked.begin : at,
                          fmt::format("figure '{}': unknown parameter {} (expected one of {}) in: {}",
                                      f.name, name, kFigureParameters, SqlForMessage(f.sql)));
      }
    }
  }
}

}  // namespace dedupsim::files
