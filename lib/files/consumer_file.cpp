// Reading a consumer file: the TOML read into a ConsumerFile, every step checked (its SQL
// prepared by the check of store/untrusted_sql.h on a scratch database, its reactions,
// labels and transactions).
// Running the steps is run_consumer.cpp's.
#include "files/consumer_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include "files/toml_reader.h"
#include "store/sql_text.h"

namespace dedupsim::files {

FileError ErrorAt(const Position& at, const std::string& message) {
  return FileError(fmt::format("{}:{}:{}: {}", at.file, at.line, at.column, message));
}

std::string_view ToString(Action action) {
  switch (action) {
    case Action::kContinue:
      return "continue";
    case Action::kSkipAndAck:
      return "skip-and-ack";
    case Action::kRollbackAndAck:
      return "rollback-and-ack";
    case Action::kReconcile:
      return "reconcile";
    case Action::kThrow:
      return "throw";
    case Action::kGoTo:
      return "go-to";
  }
  return "?";
}

bool ConsumerFile::SendsWithKey() const {
  for (const Step& s : steps) {
    if (s.kind == Step::Kind::kSendEmail && s.idempotency_key) return true;
    if (s.kind == Step::Kind::kAskProvider) return true;
  }
  return false;
}

bool ConsumerFile::Publishes() const {
  for (const Step& s : steps) {
    if (s.kind == Step::Kind::kPublish) return true;
  }
  return false;
}

std::string ConsumerFile::EmptyTablesSql() const {
  std::string sql;
  for (const std::string& table : tables) sql += fmt::format("DELETE FROM {};", QuoteSqlIdentifier(table));
  return sql;
}

namespace {

constexpr const char* kActions =
    "continue, skip-and-ack, rollback-and-ack, reconcile, throw, go-to LABEL";
constexpr const char* kParameters = ":MessageId, :Consumer, :BookId, :Quantity, :OrderId, :Now";
constexpr const char* kStepKinds =
    "begin, commit, rollback, sql, hook, send-email, publish, ask-provider, end";

struct ParameterName {
  const char* name;
  Parameter parameter;
};
constexpr ParameterName kParameterNames[] = {
    {"MessageId", Parameter::kMessageId}, {"Consumer", Parameter::kConsumer},
    {"BookId", Parameter::kBookId},       {"Quantity", Parameter::kQuantity},
    {"OrderId", Parameter::kOrderId},     {"Now", Parameter::kNow},
};

std::optional<Parameter> FindParameter(std::string_view name) {
  for (const ParameterName& p : kParameterNames) {
    if (name == p.name) return p.parameter;
  }
  return std::nullopt;
}

std::optional<Action> FindAction(std::string_view name) {
  for (Action a : {Action::kContinue, Action::kSkipAndAck, Action::kRollbackAndAck,
                   Action::kReconcile, Action::kThrow}) {
    if (name == ToString(a)) return a;
  }
  return std::nullopt;
}

Reaction ReadAction(const Value& v) {
  const std::string& text = v.String();
  if (text.rfind("go-to", 0) == 0) {
    std::string label = text.substr(5);
    const size_t from = label.find_first_not_of(' ');
    label = from == std::string::npos ? "" : label.substr(from);
    if (text.size() < 6 || text[5] != ' ' || label.empty()) {
      throw v.Error(
          fmt::format("write \"go-to LABEL\", the label of a step further down, not '{}'", text));
    }
    return {Action::kGoTo, label, 0};
  }
  std::optional<Action> a = FindAction(text);
  if (!a || *a == Action::kGoTo)
    throw v.Error(fmt::format("unknown action '{}' (expected one of {})", text, kActions));
  return {*a, "", 0};
}

// A step's label, kept with where it was written.
struct Label {
  size_t index;
  Position at;
};

bool IsIdentifier(std::string_view s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') return false;
  }
  return true;
}

// Runs the file's schema on the checker's scratch (only CREATE TABLE, CREATE INDEX on its
// own tables): the tables it creates are the file's.
void ApplySchema(ConsumerFile& file, const Value& v, UntrustedSqlChecker& scratch) {
  const std::string& text = v.String();
  try {
    file.tables = scratch.RunSchema(text, {});
  } catch (const SqlRefused& e) {
    throw v.TextError(e.offset(), fmt::format("schema: {} (in: {})", e.what(), e.statement()));
  }
  file.schema = text;
  file.schema_at = v.position();
}

// Checks the step's SQL on the scratch database: one statement that reads or writes rows
// of the run's tables, naming only the message's parameters.
void CheckSql(Step& step, const Value& v, UntrustedSqlChecker& scratch) {
  const std::string& text = v.String();
  CheckedSql checked;
  try {
    checked = scratch.CheckOne(text, SqlUse::kStep);
  } catch (const SqlRefused& e) {
    throw v.TextError(e.offset(), fmt::format("{} (in: {})", e.what(), e.statement()));
  }
  step.sql = SqlOneLine(text.substr(checked.begin, checked.end - checked.begin));
  while (!step.sql.empty() && (step.sql.back() == ';' || step.sql.back() == ' ')) {
    step.sql.pop_back();  // SQLite's tail starts after the ';'
  }
  step.sql_at = v.TextPosition(checked.begin);
  step.query = checked.query;
  step.rules = checked.rules;
  for (const std::string& name : checked.parameters) {
    std::optional<Parameter> p;
    if (name.size() > 1 && name[0] == ':') p = FindParameter(std::string_view(name).substr(1));
    if (!p) {
      const size_t at = FindSqlParameter(text, name, checked.begin);
      throw v.TextError(at == std::string::npos ? checked.begin : at,
                        fmt::format("unknown parameter {} (expected one of {}) in: {}", name,
                                    kParameters, SqlForMessage(step.sql)));
    }
    step.parameters.push_back(*p);
  }
}

// The step's statement for PostgreSQL: text (the `postgres` one, or the SQLite one) with its
// :Name parameters written $1, $2 ... in the order first named. Walks the text as
// PostgreSQL reads it (quoted strings and names, E'' escapes, $tag$ quotes, nested /* */
// and -- comments, :: casts), so a colon inside any of them is left alone.
void ReadPgText(Step& step, const Value& v) {
  const std::string& text = v.String();
  std::string out;
  std::map<Parameter, int> numbers;
  auto ident = [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '_';
  };
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    const char ch = text[i];
    const size_t start = i;
    if (ch == '\'' || ch == '"') {
      const bool escapes = ch == '\'' && i > 0 && (text[i - 1] == 'E' || text[i - 1] == 'e') &&
                           (i < 2 || !ident(text[i - 2]));
      for (++i; i < n; ++i) {
        if (escapes && text[i] == '\\') {
          ++i;
        } else if (text[i] == ch) {
          if (i + 1 < n && text[i + 1] == ch) {
            ++i;
          } else {
            break;
          }
        }
      }
      if (i >= n) throw v.TextError(start, "PostgreSQL text: a quote is never closed");
      ++i;
    } else if (ch == '-' && i + 1 < n && text[i + 1] == '-') {
      while (i < n && text[i] != '\n') ++i;
    } else if (ch == '/' && i + 1 < n && text[i + 1] == '*') {
      int depth = 0;
      while (i < n) {
        if (text.compare(i, 2, "/*") == 0) {
          ++depth;
          i += 2;
        } else if (text.compare(i, 2, "*/") == 0) {
          i += 2;
          if (--depth == 0) break;
        } else {
          ++i;
        }
      }
      if (depth != 0) throw v.TextError(start, "PostgreSQL text: a /* comment is never closed");
    } else if (ch == '$' && (i == 0 || !ident(text[i - 1]))) {
      size_t j = i + 1;
      if (j < n && std::isdigit(static_cast<unsigned char>(text[j])) != 0) {
        throw v.TextError(start, fmt::format("write parameters by name ({}), not ${}",
                                             kParameters, text[j]));
      }
      while (j < n && ident(text[j])) ++j;
      if (j < n && text[j] == '$') {  // $tag$ ... $tag$
        const std::string tag = text.substr(i, j + 1 - i);
        const size_t end = text.find(tag, j + 1);
        if (end == std::string::npos) {
          throw v.TextError(start, fmt::format("PostgreSQL text: {} is never closed", tag));
        }
        i = end + tag.size();
      } else {
        i = j;
      }
    } else if (ch == ':' && i + 1 < n && text[i + 1] == ':') {
      i += 2;
    } else if (ch == ':' && i + 1 < n && ident(text[i + 1])) {
      size_t j = i + 1;
      while (j < n && ident(text[j])) ++j;
      const std::string name = text.substr(i + 1, j - i - 1);
      std::optional<Parameter> p = FindParameter(name);
      if (!p) {
        throw v.TextError(start, fmt::format("unknown parameter :{} (expected one of {})", name,
                                             kParameters));
      }
      auto [it, fresh] = numbers.emplace(*p, static_cast<int>(numbers.size()) + 1);
      if (fresh) step.pg_parameters.push_back(*p);
      out += fmt::format("${}", it->second);
      i = j;
      continue;
    } else {
      ++i;
    }
    out.append(text, start, i - start);
  }
  step.pg_sql = out;
  step.pg_sql_at = v.position();
}

// ":MessageId" and the like: an idempotency key.
Parameter ReadKeyParameter(const Value& value) {
  const std::string& name = value.String();
  std::optional<Parameter> p;
  if (name.size() > 1 && name[0] == ':') p = FindParameter(std::string_view(name).substr(1));
  if (!p) {
    throw value.Error(
        fmt::format("unknown parameter '{}' (expected one of {})", name, kParameters));
  }
  return *p;
}

// second: the scratch of the file's second store, or null when it names none.
Step ReadStep(const Value& table, UntrustedSqlChecker& scratch, UntrustedSqlChecker* second,
              std::map<std::string, Position>& hooks) {
  Step step;
  step.at = table.position();
  std::optional<Value> kind_key;
  static const std::set<std::string> kKinds{"begin",      "commit",  "rollback",     "sql", "hook",
                                            "send-email", "publish", "ask-provider", "end"};
  static const std::set<std::string> kModifiers{"on-duplicate", "on-zero-rows",    "on-row",
                                                "on-no-row",    "idempotency-key", "store",
                                                "on-sent",      "on-not-sent",     "label"};
  std::map<std::string, Value> modifiers;
  for (const auto& [key, value] : table.Entries()) {
    if (kKinds.count(key) > 0) {
      if (kind_key) {
        throw value.KeyError(
            fmt::format("a step does one thing; this one already has '{}'", kind_key->key()));
      }
      kind_key = value;
    } else if (kModifiers.count(key) > 0) {
      modifiers.emplace(key, value);
    } else {
      throw value.KeyError(
          fmt::format("unknown step key '{}' (expected a step: {}; or one of "
                      "on-duplicate, on-zero-rows, on-row, on-no-row, on-sent, on-not-sent, "
                      "idempotency-key, store, label)",
                      key, kStepKinds));
    }
  }
  if (!kind_key) throw table.Error(fmt::format("a step needs one of {}", kStepKinds));
  const Value& v = *kind_key;
  const std::string& kind = v.key();
  std::set<std::string> allowed;
  if (kind == "begin") {
    step.kind = Step::Kind::kBegin;
    std::string k = v.String();
    if (k == "deferred") {
      step.begin = TransactionKind::kDeferred;
    } else if (k == "immediate") {
      step.begin = TransactionKind::kImmediate;
    } else if (k == "exclusive") {
      step.begin = TransactionKind::kExclusive;
    } else {
      throw v.Error(
          fmt::format("unknown transaction kind '{}' (expected deferred, immediate or "
                      "exclusive)",
                      k));
    }
  } else if (kind == "commit" || kind == "rollback") {
    if (!v.Bool()) throw v.Error(fmt::format("write {} = true", kind));
    step.kind = kind == "commit" ? Step::Kind::kCommit : Step::Kind::kRollback;
  } else if (kind == "hook") {
    step.kind = Step::Kind::kHook;
    step.name = v.String();
    if (!IsIdentifier(step.name)) {
      throw v.Error(fmt::format(
          "a hook point is named like AfterSend (letters and digits), not '{}'", step.name));
    }
    auto [it, fresh] = hooks.emplace(step.name, v.position());
    if (!fresh) {
      throw v.Error(
          fmt::format("hook {} is named twice (first at line {}, column {}); each hook "
                      "point needs its own name",
                      step.name, it->second.line, it->second.column));
    }
  } else if (kind == "publish") {
    step.kind = Step::Kind::kPublish;
    step.name = v.String();
    if (!IsIdentifier(step.name)) throw v.Error("publish names a topic, like StockReserved");
  } else if (kind == "send-email") {
    step.kind = Step::Kind::kSendEmail;
    if (!v.Bool()) throw v.Error("write send-email = true");
    allowed.insert("idempotency-key");
  } else if (kind == "ask-provider") {
    step.kind = Step::Kind::kAskProvider;
    step.idempotency_key = ReadKeyParameter(v);
    allowed = {"on-sent", "on-not-sent"};
  } else if (kind == "end") {
    step.kind = Step::Kind::kEnd;
    const std::string& result = v.String();
    if (result == "processed") {
      step.end = Result::kProcessed;
    } else if (result == "skipped") {
      step.end = Result::kSkipped;
    } else if (result == "reconcile") {
      step.end = Result::kNeedsReconciliation;
    } else {
      throw v.Error(fmt::format(
          "unknown end '{}' (expected processed: the work was done; skipped: it had been done "
          "before, ack; reconcile: flag it for a person)",
          result));
    }
  } else {  // sql
    step.kind = Step::Kind::kSql;
    Value sqlite_text = v;
    std::optional<Value> pg_text;
    if (v.IsTable()) {
      std::optional<Value> found;
      for (const auto& [dialect, text] : v.Entries()) {
        if (dialect == "sqlite") {
          found = text;
        } else if (dialect == "postgres") {
          step.other_dialects[dialect] = text.String();
          pg_text = text;
        } else {
          throw text.KeyError(
              fmt::format("unknown dialect '{}' (expected sqlite or postgres)", dialect));
        }
      }
      if (!found) throw v.Error("a sql table needs the statement for sqlite (sqlite = \"...\")");
      sqlite_text = *found;
    }
    if (auto store = modifiers.find("store"); store != modifiers.end()) {
      if (second == nullptr || store->second.String() != "cache") {
        throw store->second.Error(fmt::format(
            "store = \"{}\" names no second store of this file (expected second-store = "
            "\"cache\" at the top, then store = \"cache\")",
            store->second.String()));
      }
      step.on_second_store = true;
    }
    CheckSql(step, sqlite_text, step.on_second_store ? *second : scratch);
    ReadPgText(step, pg_text ? *pg_text : sqlite_text);
    if (step.query) {
      allowed = {"on-row", "on-no-row", "store"};
    } else {
      allowed = {"on-duplicate", "on-zero-rows", "store"};
    }
  }
  if (auto label = modifiers.find("label"); label != modifiers.end()) {
    step.label = label->second.String();
    const bool word = !step.label.empty() &&
                      std::isalpha(static_cast<unsigned char>(step.label[0])) &&
                      std::all_of(step.label.begin(), step.label.end(), [](char c) {
                        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
                      });
    if (!word) {
      throw label->second.Error(fmt::format(
          "a label is one word (letters, digits, -), like already-sent, not '{}'", step.label));
    }
    modifiers.erase(label);
  }
  for (const auto& [key, value] : modifiers) {
    if (allowed.count(key) == 0) {
      std::string expected = allowed.empty() ? "none" : fmt::format("{}", fmt::join(allowed, ", "));
      throw value.KeyError(fmt::format(
          "'{}' does not apply to a {} step{} (expected: {})", key, kind,
          kind == "sql" ? (step.query ? " that reads rows" : " that writes") : "", expected));
    }
    if (key.starts_with("on-") && !(key == "on-row" && value.IsTable())) {
      step.written.push_back({key, value.position(), value.String()});
    }
    if (key == "on-duplicate") {
      step.on_duplicate = ReadAction(value);
    } else if (key == "on-zero-rows") {
      step.on_zero_rows = ReadAction(value);
    } else if (key == "on-no-row") {
      step.on_no_row = ReadAction(value);
    } else if (key == "on-row") {
      if (value.IsTable()) {
        for (const auto& [k, a] : value.Entries()) {
          if (k == "if-null" || k == "otherwise") {
            step.written.push_back({"on-row " + k, a.position(), a.String()});
          }
          if (k == "if-null") {
            step.on_row_if_null = ReadAction(a);
          } else if (k == "otherwise") {
            step.on_row = ReadAction(a);
          } else {
            throw a.KeyError(
                fmt::format("unknown key '{}' in on-row (expected if-null, otherwise)", k));
          }
        }
      } else {
        step.on_row = ReadAction(value);
      }
    } else if (key == "idempotency-key") {
      step.idempotency_key = ReadKeyParameter(value);
    } else if (key == "on-sent") {
      step.on_sent = ReadAction(value);
    } else if (key == "on-not-sent") {
      step.on_not_sent = ReadAction(value);
    }
  }
  return step;
}

// The reactions a step of its kind takes, by their keys.
std::vector<std::pair<const char*, Reaction*>> Reactions(Step& s) {
  std::vector<std::pair<const char*, Reaction*>> out;
  if (s.kind == Step::Kind::kSql && s.query) {
    out = {{"on-row", &s.on_row}, {"on-no-row", &s.on_no_row}};
    if (s.on_row_if_null) out.emplace_back("on-row", &*s.on_row_if_null);
  } else if (s.kind == Step::Kind::kSql) {
    out = {{"on-duplicate", &s.on_duplicate}, {"on-zero-rows", &s.on_zero_rows}};
  } else if (s.kind == Step::Kind::kAskProvider) {
    out = {{"on-sent", &s.on_sent}, {"on-not-sent", &s.on_not_sent}};
  }
  return out;
}

// Whether the step after this one can run next (without a go-to).
bool FallsThrough(Step& s) {
  if (s.kind == Step::Kind::kEnd) return false;
  if (s.kind == Step::Kind::kSql && !s.query) return true;  // a write that changed rows
  const auto reactions = Reactions(s);
  if (reactions.empty()) return true;
  for (const auto& [key, r] : reactions) {
    if (r->action == Action::kContinue) return true;
  }
  return false;
}

// Every go-to names a label of a step further down (no loops: a delivery always ends).
void ResolveLabels(std::vector<Step>& steps) {
  std::map<std::string, Label> labels;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].label.empty()) continue;
    auto [it, fresh] = labels.emplace(steps[i].label, Label{i, steps[i].at});
    if (!fresh) {
      throw ErrorAt(steps[i].at,
                    fmt::format("label {} is given twice (first at line {}, column "
                                "{}); each label names one step",
                                steps[i].label, it->second.at.line, it->second.at.column));
    }
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    for (auto& [key, r] : Reactions(steps[i])) {
      if (r->action != Action::kGoTo) continue;
      auto it = labels.find(r->label);
      if (it == labels.end()) {
        std::string known;
        for (const auto& [name, l] : labels) known += (known.empty() ? "" : ", ") + name;
        throw ErrorAt(steps[i].at,
                      fmt::format("{} = \"go-to {}\": no step has label = \"{}\" (labels: {})", key,
                                  r->label, r->label, known.empty() ? "none" : known));
      }
      if (it->second.index <= i) {
        throw ErrorAt(
            steps[i].at,
            fmt::format("{} = \"go-to {}\" jumps back to line {}: a go-to jumps only to a "
                        "step further down, so every delivery ends",
                        key, r->label, it->second.at.line));
      }
      r->target = it->second.index;
    }
  }
}

// Follows every way through the steps (in order, and along each go-to): a transaction is
// begun before it is committed, closed before the end, the same on every way into a step;
// an action that rolls back has a transaction to roll back; every step can be reached.
void CheckTransactions(std::vector<Step>& steps, const Position& end) {
  struct Arrival {
    bool reached = false;
    std::optional<Position> open;  // the transaction open on arrival, begun there
    Position from;                 // the step the first way in came from
  };
  std::vector<Arrival> in(steps.size() + 1);
  in[0].reached = true;
  auto arrive = [&](size_t to, const std::optional<Position>& open, const Position& from) {
    Arrival& a = in[to];
    if (!a.reached) {
      a = {true, open, from};
      return;
    }
    if (a.open.has_value() != open.has_value()) {
      const Position& with = open ? from : a.from;
      const Position& without = open ? a.from : from;
      throw ErrorAt(to < steps.size() ? steps[to].at : end,
                    fmt::format("this step is reached with a transaction open (from line {}) "
                                "and with none (from line {}); expected the same on every way in",
                                with.line, without.line));
    }
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    Step& s = steps[i];
    if (!in[i].reached) {
      throw ErrorAt(s.at,
                    "this step is never reached: the steps before it end every delivery and no "
                    "go-to names it (expected a label = \"...\" that a go-to jumps to)");
    }
    std::optional<Position> open = in[i].open;
    for (const auto& [key, r] : Reactions(s)) {
      if (r->action == Action::kRollbackAndAck && !open) {
        throw ErrorAt(s.at, fmt::format("{} = \"rollback-and-ack\" but no transaction is open here "
                                        "(expected skip-and-ack, or a begin step before)",
                                        key));
      }
    }
    switch (s.kind) {
      case Step::Kind::kBegin:
        if (open) {
          throw ErrorAt(s.at,
                        fmt::format("begin inside the transaction begun at line {}, column {} "
                                    "(expected commit or rollback first)",
                                    open->line, open->column));
        }
        open = s.at;
        break;
      case Step::Kind::kCommit:
      case Step::Kind::kRollback:
        if (!open) {
          throw ErrorAt(s.at,
                        fmt::format("{} with no transaction open (expected a begin step before)",
                                    s.kind == Step::Kind::kCommit ? "commit" : "rollback"));
        }
        open.reset();
        break;
      case Step::Kind::kEnd:
        if (open) {
          throw ErrorAt(s.at, fmt::format("end with the transaction begun at line {} still open "
                                          "(expected a commit or rollback step before)",
                                          open->line));
        }
        break;
      default:
        break;
    }
    for (const auto& [key, r] : Reactions(s)) {
      if (r->action == Action::kGoTo) arrive(r->target, open, s.at);
    }
    if (FallsThrough(s)) arrive(i + 1, open, s.at);
  }
  if (in.back().reached && in.back().open) {
    throw ErrorAt(*in.back().open,
                  fmt::format("this transaction is never committed or rolled back (expected "
                              "a commit step before the end at line {})",
                              end.line));
  }
}

}  // namespace

ConsumerFile ParseConsumerFile(std::string_view text, const std::string& path) {
  Document doc = Document::Parse(text, path);
  const Value& root = doc.root();
  ConsumerFile file;
  file.path = path;
  std::string stem = path;
  if (size_t slash = stem.find_last_of('/'); slash != std::string::npos)
    stem = stem.substr(slash + 1);
  if (size_t dot = stem.find('.'); dot != std::string::npos) stem = stem.substr(0, dot);
  file.name = stem;
  // The file's SQL is prepared here to find its mistakes and its parameters; nothing of the
  // file runs anywhere else while it is loaded.
  const std::unique_ptr<UntrustedSqlChecker> scratch = UntrustedSqlChecker::NewScratch();
  std::map<std::string, Position> hooks;
  std::optional<Value> steps;
  std::optional<Value> schema;
  for (const auto& [key, value] : root.Entries()) {
    if (key == "name") {
      file.name = value.String();
      if (!IsIdentifier(file.name.substr(0, 1)) || file.name.find(' ') != std::string::npos) {
        throw value.Error("a name is one word in kebab-case, like my-inbox");
      }
    } else if (key == "summary") {
      file.summary = value.String();
    } else if (key == "effect") {
      file.effect = value.String();
      if (file.effect != "stock" && file.effect != "email") {
        throw value.Error(
            fmt::format("unknown effect '{}' (expected stock: the stock reserved "
                        "once; or email: one email sent)",
                        file.effect));
      }
    } else if (key == "consumer") {
      file.consumer = value.String();
    } else if (key == "partner") {
      file.partner = value.String();
      file.partner_at = value.position();
    } else if (key == "second-store") {
      file.second_store = value.String();
      if (file.second_store != "cache") {
        throw value.Error(fmt::format("unknown second store '{}' (expected cache: a dedup cache "
                                      "in its own file, table CacheKeys (Key, SetAt))",
                                      file.second_store));
      }
    } else if (key == "dialect") {
      file.dialect = value.String();
      if (file.dialect != "sqlite") {
        throw value.Error(
            fmt::format("dialect '{}' cannot run yet (expected sqlite; give a "
                        "statement per backend with sql = {{ sqlite = \"...\", "
                        "postgres = \"...\" }})",
                        file.dialect));
      }
    } else if (key == "schema") {
      schema = value;
    } else if (key == "step") {
      steps = value;
    } else if (key == "lesson") {
      // text for people: explain and docs read it; nothing runs it
      (void)value.String();
    } else {
      throw value.KeyError(
          fmt::format("unknown key '{}' (expected name, summary, effect, consumer, second-store, "
                      "partner, dialect, schema, lesson, or [[step]] tables)",
                      key));
    }
  }
  if (file.effect.empty()) {
    throw root.Error("missing effect = \"stock\" or \"email\" (what exactly-once is counted on)");
  }
  if (file.consumer.empty()) file.consumer = file.name;
  if (schema) ApplySchema(file, *schema, *scratch);
  // The second store's scratch: the cache's table only, as the explorer's second file has.
  std::unique_ptr<UntrustedSqlChecker> second;
  if (!file.second_store.empty()) second = UntrustedSqlChecker::NewScratch(SideStoreKind::kCache);
  if (!steps) throw root.Error("no steps: a consumer is a list of [[step]] tables");
  for (const Value& table : steps->Items()) {
    if (!table.IsTable()) throw table.Error("each step is a table: [[step]] then its keys");
    file.steps.push_back(
        ReadStep(table, *scratch, second.get(), hooks));
  }
  if (file.steps.empty()) throw steps->Error("no steps: a consumer is a list of [[step]] tables");
  if (!file.second_store.empty() && file.SendsWithKey()) {
    throw root.Error("one second store per file: the cache (second-store) or the provider that "
                     "honours an idempotency key, not both");
  }
  ResolveLabels(file.steps);
  CheckTransactions(file.steps, doc.end());
  return file;
}

ConsumerFile LoadConsumerFile(const std::string& path) {
  return ParseConsumerFile(ReadWholeFile(path), path);
}

}  // namespace dedupsim::files
