#include "views/mermaid.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "views/lanes.h"
#include "views/step_text.h"

namespace dedupsim {

namespace {

constexpr const char* kBroker = "Broker";
constexpr const char* kDatabase = "DB";
constexpr const char* kEmail = "Email";
constexpr int64_t kGapWorthNotingUs = 20000;
constexpr size_t kNoteWidth = 60;

// Text Mermaid shows as written: no statement separators, entity codes or markup.
std::string Clean(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case ';':
        out += ',';
        break;
      case '#':
        break;
      case '<':
        out += '(';
        break;
      case '>':
        out += ')';
        break;
      case '\n':
      case '\r':
        out += ' ';
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Cleaned, and broken with <br/> so a long note stays narrow.
std::string NoteText(std::string_view text) {
  std::string clean = Clean(text);
  std::string out;
  size_t line = 0;
  size_t start = 0;
  while (start < clean.size()) {
    size_t end = clean.find(' ', start);
    if (end == std::string::npos) end = clean.size();
    std::string_view word(clean.data() + start, end - start);
    if (line > 0 && line + 1 + word.size() > kNoteWidth) {
      out += "<br/>";
      line = 0;
    } else if (line > 0) {
      out += ' ';
      ++line;
    }
    out += word;
    line += word.size();
    start = end + 1;
  }
  return out;
}

// The simulated broker records its steps under this instance name.
constexpr const char* kBrokerInstance = "broker";

std::string ConsumerId(const std::string& instance) {
  if (instance.empty()) return "Setup";
  if (instance == kBrokerInstance) return kBroker;
  std::string id = "Consumer";
  for (char c : instance) {
    if (std::isalnum(static_cast<unsigned char>(c))) id += c;
  }
  return id;
}

bool IsWrite(std::string_view sql) {
  std::string verb = AbbreviateSql(sql);
  verb = verb.substr(0, verb.find(' '));
  return verb == "INSERT" || verb == "UPDATE" || verb == "DELETE" || verb == "REPLACE";
}

int64_t RoundMs(int64_t us) { return std::llround(static_cast<double>(us) / 1000.0); }

}  // namespace

std::string MermaidDiagram(const std::vector<TraceEvent>& recorded, const MermaidOptions& options) {
  const std::vector<TraceEvent> events = CausalOrder(recorded);
  const std::vector<int> deliveries = DeliveryStarts(events);
  // Without timings, ids that change on every run (pids, message and order ids) become
  // stable names, numbered in the order they first appear.
  std::map<std::string, std::string> id_names;
  // UUIDs (message, order, book ids) and 64-bit payload hashes.
  const std::regex uuid(
      "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\\b[0-9a-f]{16}\\b");
  auto text = [&](std::string_view s) {
    if (options.timings) return std::string(s);
    std::string scrubbed = ScrubPids(s);
    std::string out;
    auto begin = std::sregex_iterator(scrubbed.begin(), scrubbed.end(), uuid);
    size_t last = 0;
    for (auto it = begin; it != std::sregex_iterator(); ++it) {
      out += scrubbed.substr(last, static_cast<size_t>(it->position()) - last);
      auto [entry, added] = id_names.try_emplace(it->str(), "");
      if (added) entry->second = fmt::format("id-{}", id_names.size());
      out += entry->second;
      last = static_cast<size_t>(it->position() + it->length());
    }
    return out + scrubbed.substr(last);
  };

  std::vector<std::string> instances;
  std::set<int> pids;
  bool emails = false;
  for (const TraceEvent& e : events) {
    if (e.instance != kBrokerInstance &&
        std::find(instances.begin(), instances.end(), e.instance) == instances.end()) {
      instances.push_back(e.instance);
    }
    if (!e.instance.empty()) pids.insert(e.pid);
    if (e.kind == "send") emails = true;
  }
  // Consumers in name order (A before B), whoever moved first.
  std::sort(instances.begin(), instances.end(), [](const std::string& a, const std::string& b) {
    if (a.empty() != b.empty()) return b.empty();  // set-up last
    return a < b;
  });
  const bool show_pids = options.timings && pids.size() > 1;

  std::string out;
  if (!options.title.empty()) out += fmt::format("%% {}\n", Clean(options.title));
  out += "sequenceDiagram\n";
  out += fmt::format("    participant {}\n", kBroker);
  for (const std::string& instance : instances) {
    out += fmt::format("    participant {} as {}\n", ConsumerId(instance),
                       instance.empty()        ? std::string("set-up")
                       : instance.size() == 1 ? "Consumer " + Clean(instance)
                                              : Clean(instance));
  }
  out += fmt::format("    participant {} as Database\n", kDatabase);
  if (emails) out += fmt::format("    participant {} as Email provider\n", kEmail);
  if (events.empty()) {
    out += fmt::format("    Note over {}: no steps were recorded\n", kDatabase);
    return out;
  }

  // Statements whose request arrow was drawn where their lock wait began.
  std::set<size_t> requested;
  std::map<std::string, int> active;  // open transactions per participant
  std::map<std::pair<std::string, int>, bool> open_transaction;  // per instance and pid
  auto next_in_lane = [&](size_t i, bool sql_only) -> std::optional<size_t> {
    for (size_t j = i + 1; j < events.size(); ++j) {
      if (events[j].instance != events[i].instance || events[j].pid != events[i].pid) continue;
      if (!sql_only || events[j].kind == "sql") return j;
    }
    return std::nullopt;
  };

  for (size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    const std::string who = ConsumerId(e.instance);
    if (deliveries[i] > 0 && who != kBroker) {
      std::string pid = show_pids ? fmt::format(" (pid {})", e.pid) : "";
      out += fmt::format("    {}->>{}: delivery {}{}\n", kBroker, who, deliveries[i], pid);
    }
    if (e.kind == "sql") {
      if (!requested.count(i)) {
        out += fmt::format("    {}->>{}: {}\n", who, kDatabase, Clean(AbbreviateSql(e.detail)));
      }
      const SqlControl control = ClassifySql(e.detail);
      const bool ok = e.result == "ok";
      bool& in_transaction = open_transaction[{e.instance, e.pid}];
      std::string result = DescribeResult(e, options.timings);
      // A write outside a transaction is committed by itself, at once.
      if (!in_transaction && ok && IsWrite(e.detail)) result += " (autocommit)";
      out += fmt::format("    {}-->>{}: {}\n", kDatabase, who, Clean(result));
      if (control == SqlControl::kBegin && ok) in_transaction = true;
      if ((control == SqlControl::kCommit && ok) || control == SqlControl::kRollback)
        in_transaction = false;
      // The consumer's lifeline is active while its transaction is open.
      if (control == SqlControl::kBegin && ok) {
        out += fmt::format("    activate {}\n", who);
        ++active[who];
      } else if ((control == SqlControl::kCommit && ok) || control == SqlControl::kRollback) {
        if (active[who] > 0) {
          out += fmt::format("    deactivate {}\n", who);
          --active[who];
        }
      }
    } else if (e.kind == "wait") {
      if (auto j = next_in_lane(i, true)) {
        out += fmt::format("    {}->>{}: {}\n", who, kDatabase,
                           Clean(AbbreviateSql(events[*j].detail)));
        requested.insert(*j);
      }
      out +=
          fmt::format("    Note over {},{}: {}\n", who, kDatabase, NoteText("waits: " + e.detail));
    } else if (e.kind == "hook") {
      // A long gap after a hook is the hook holding the consumer there (--hold-ms).
      std::string gap;
      if (auto j = next_in_lane(i, false); j && options.timings) {
        int64_t us = events[*j].at_us - e.at_us;
        if (us >= kGapWorthNotingUs) gap = fmt::format(", next step done {} ms later", RoundMs(us));
      }
      out += fmt::format("    Note over {}: hook {}{}\n", who, Clean(text(e.detail)), gap);
    } else if (e.kind == "crash") {
      std::string how = e.result.empty() || e.result == "crash" ? "" : ": " + e.result;
      std::string pid = show_pids ? fmt::format(" (pid {})", e.pid) : "";
      out += fmt::format("    Note over {}: {}\n", who,
                         NoteText(fmt::format("crash at {}{}{}", e.detail, how, pid)));
    } else if (e.kind == "died") {
      out += fmt::format("    Note over {}: {}\n", who,
                         NoteText(text(fmt::format("died at {}: {}", e.detail, e.result))));
      // Its open transaction died with it.
      while (active[who] > 0) {
        out += fmt::format("    deactivate {}\n", who);
        --active[who];
      }
    } else if (e.kind == "recover") {
      out += fmt::format("    Note over {},{}: {}\n", who, kDatabase,
                         NoteText(text("recovery: " + e.detail)));
    } else if (e.kind == "send") {
      out += fmt::format("    {}->>{}: {}\n", who, kEmail, Clean(text(e.detail)));
      out +=
          fmt::format("    {}-->>{}: {}\n", kEmail, who, Clean(e.result.empty() ? "ok" : e.result));
    } else if (e.kind == "lock") {
      // Where a write lock was taken and released: the activation bar of the open
      // transaction already shows it; the times are in the trace and the JSON.
    } else if (e.kind != "open") {
      out += fmt::format("    Note over {}: {}\n", who,
                         NoteText(text(fmt::format("{} {} {}", e.kind, e.detail, e.result))));
    }
  }
  return out;
}

}  // namespace dedupsim
