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

std::string Alnum(std::string_view s) {
  std::string id;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) id += c;
  }
  return id;
}

int64_t RoundMs(int64_t us) { return std::llround(static_cast<double>(us) / 1000.0); }

struct Participant {
  std::string id;
  std::string title;
  int order = 0;  // where it stands, left to right
  size_t first = 0;
};

std::string TargetId(const std::string& target) {
  if (target.empty() || target == "database") return "DB";
  if (target == "cache") return "Cache";
  if (target == "email provider") return "Email";
  return "Store" + Alnum(target);
}

std::string TargetTitle(const std::string& target) {
  if (target.empty() || target == "database") return "Database";
  if (target == "cache") return "Cache";
  if (target == "email provider") return "Email provider";
  return target;
}

}  // namespace

std::string MermaidDiagram(const std::vector<TraceEvent>& recorded, const MermaidOptions& options) {
  const std::vector<TraceEvent> events = CausalOrder(recorded);
  ShortIds ids(events);
  // A payload hash (16 hex digits) is drawn as its first 8: the same payload, the same
  // short hash, in every picture (the ids it covers are seeded where a page must not change).
  auto text = [&](std::string_view s) {
    std::string out = ids.Shorten(options.timings ? std::string(s) : ScrubPids(s));
    static const std::regex kHash("\\b([0-9a-f]{8})[0-9a-f]{8}\\b");
    return std::regex_replace(out, kHash, "$1");
  };

  // Lanes give each consumer process its title ("Consumer A (restarted)").
  std::map<std::string, std::string> lane_titles;
  for (const Lane& lane : BuildLanes(events, ids)) lane_titles[lane.key] = lane.title;

  std::map<std::string, Participant> participants;  // by id
  std::map<std::string, std::string> lane_ids;      // lane key -> participant id
  std::set<std::pair<std::string, int>> taken;      // deliveries a consumer opened
  std::set<int> pids;
  auto add = [&](const std::string& id, const std::string& title, int order, size_t i) {
    auto [it, added] = participants.try_emplace(id, Participant{id, title, order, i});
    return it->second.id;
  };
  std::map<std::string, int> restarts;  // instance -> processes seen
  auto who_of = [&](const TraceEvent& e, size_t i) -> std::string {
    const std::string key = LaneKey(e);
    if (auto it = lane_ids.find(key); it != lane_ids.end()) return it->second;
    std::string id;
    if (key == "producer") {
      id = add("Producer", "Producer", 0, i);
    } else if (key == "broker") {
      id = add("Broker", "Broker", 1, i);
    } else if (key == "operator") {
      id = add("Operator", "Operator", 2, i);
    } else if (key == "database") {
      id = add("DB", "Database", 5, i);
    } else if (key == "probe") {
      id = add("Check", "scenario check", 9, i);
    } else if (key == "setup") {
      id = add("Setup", "set-up", 8, i);
    } else {
      const int n = restarts[e.instance]++;
      id = "C" + Alnum(e.instance) + (n > 0 ? fmt::format("r{}", n) : "");
      if (id == "C") id = "Cx";
      add(id, lane_titles.count(key) ? lane_titles[key] : ActorTitle(e), 3, i);
    }
    lane_ids[key] = id;
    return id;
  };

  // First pass: who takes part, in what order.
  bool deliveries = false;
  for (size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    if (LaneKey(e).empty()) continue;
    who_of(e, i);
    if (!e.instance.empty() && ActorOf(e) == kActorConsumer) pids.insert(e.pid);
    if (e.kind == "sql")
      add(TargetId(e.target), TargetTitle(e.target),
          5 + (e.target.empty() || e.target == "database" ? 0 : 1), i);
    if (e.kind == "recover") add("DB", "Database", 5, i);
    if (e.kind == "send" || e.kind == "reconcile") add("Email", "Email provider", 6, i);
    if (e.kind == "open" && e.delivery > 0) {
      deliveries = true;
      taken.insert({e.key, e.delivery});
    }
  }
  if (deliveries) add("Broker", "Broker", 1, 0);
  const bool show_pids = options.timings && pids.size() > 1;

  std::vector<Participant> ordered;
  for (const auto& [id, p] : participants) ordered.push_back(p);
  std::stable_sort(ordered.begin(), ordered.end(), [](const Participant& a, const Participant& b) {
    if (a.order != b.order) return a.order < b.order;
    if (a.order == 3 && a.title != b.title) {
      // Consumers by name (A before B), a restarted process right after its first.
      return a.title < b.title;
    }
    return a.first < b.first;
  });

  std::string out;
  if (!options.title.empty()) out += fmt::format("%% {}\n", Clean(options.title));
  out += "sequenceDiagram\n";
  for (const Participant& p : ordered) {
    if (p.id == "Check") {
      out += "    box rgb(238,238,238) the scenario's own reads (not a consumer)\n";
      out += fmt::format("    participant {} as {}\n", p.id, Clean(p.title));
      out += "    end\n";
    } else {
      out += fmt::format("    participant {} as {}\n", p.id, Clean(p.title));
    }
  }
  if (events.empty() || ordered.empty()) {
    if (ordered.empty()) out += "    participant DB as Database\n";
    out += "    Note over DB: no steps were recorded\n";
    return out;
  }
  const std::string first = ordered.front().id;
  const std::string last = ordered.back().id;
  auto across = [&](const std::string& s) {
    return first == last ? fmt::format("    Note over {}: {}\n", first, s)
                         : fmt::format("    Note over {},{}: {}\n", first, last, s);
  };

  std::set<size_t> requested;  // statements whose request arrow was drawn at their wait
  std::map<std::string, int> active;
  std::map<std::string, bool> in_transaction;                       // per participant
  std::map<std::pair<std::string, int>, std::string> delivered_to;  // (key, delivery) -> id
  auto next_in_lane = [&](size_t i, bool sql_only) -> std::optional<size_t> {
    for (size_t j = i + 1; j < events.size(); ++j) {
      if (LaneKey(events[j]) != LaneKey(events[i])) continue;
      if (!sql_only || events[j].kind == "sql") return j;
    }
    return std::nullopt;
  };

  for (size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    if (e.kind == "part") {
      out += across(NoteText("sub-run: " + e.detail));
      continue;
    }
    if (e.kind == "clock") {
      out += across(NoteText("simulated time: " + e.detail));
      continue;
    }
    if (LaneKey(e).empty()) continue;
    const std::string who = who_of(e, i);
    if (e.kind == "open") {
      if (e.delivery > 0) {
        delivered_to[{e.key, e.delivery}] = who;
        std::string pid = show_pids ? fmt::format(" (pid {})", e.pid) : "";
        out += fmt::format("    Broker->>{}: {} delivery {}{}\n", who, ids.Name(e.key), e.delivery,
                           pid);
      }
      continue;
    }
    if (e.kind == "broker") {
      if (e.op == "deliver" && taken.count({e.key, e.delivery})) continue;  // its arrow comes
      auto to = delivered_to.find({e.key, e.delivery});
      const std::string m = ids.Name(e.key);
      const bool dead = e.result.rfind("dead-lettered", 0) == 0;
      if (e.op == "send") {
        out += fmt::format("    Producer->>Broker: send {}\n", m);
        out += fmt::format("    Broker-->>Producer: {}\n", Clean(e.result));
      } else if (e.op == "drop") {
        out += fmt::format("    Producer->>Broker: send {}\n", m);
        out += fmt::format("    Broker--xProducer: {}\n", Clean(e.result));
      } else if (e.op == "replay") {
        out += fmt::format("    Operator->>Broker: replay {} from the dead-letter queue\n", m);
      } else if (to != delivered_to.end() && (e.op == "ack" || e.op == "abandon" ||
                                              e.op == "ack-lost" || e.op == "dead-letter")) {
        if (e.op == "ack") {
          out += fmt::format("    {}->>Broker: ack {}\n", to->second, m);
        } else if (e.op == "abandon") {
          out += fmt::format("    {}->>Broker: nack {} (abandon)\n", to->second, m);
        } else if (e.op == "ack-lost") {
          out += fmt::format("    {}-xBroker: ack {} (lost on the way)\n", to->second, m);
        } else {
          out +=
              fmt::format("    {}->>Broker: dead-letter {}: {}\n", to->second, m, Clean(e.result));
        }
        if (e.op == "abandon" || e.op == "ack-lost") {
          out += fmt::format(
              "    Note over Broker: {}\n",
              NoteText(dead ? fmt::format("{} dead-lettered: {}", m, e.result.substr(15))
                            : fmt::format("{} back in the queue", m)));
        }
      } else {
        bool bad = false;
        out += fmt::format("    Note over Broker: {}\n", NoteText(BrokerStepText(e, ids, &bad)));
      }
      continue;
    }
    if (e.kind == "sql") {
      const std::string target = TargetId(e.target);
      if (!requested.count(i)) {
        out += fmt::format("    {}->>{}: {}\n", who, target, Clean(StepLabel(e)));
      }
      const bool ok = e.result == "ok";
      bool& open = in_transaction[who + "/" + target];
      std::string result = DescribeResult(e, options.timings);
      // A write outside a transaction is committed by itself, at once.
      if (!open && ok && IsWrite(e)) result += " (autocommit)";
      out += fmt::format("    {}-->>{}: {}\n", target, who, Clean(result));
      if (IsBegin(e) && ok) {
        open = true;
        out += fmt::format("    activate {}\n", who);
        ++active[who];
      } else if ((IsCommit(e) && ok) || IsRollback(e)) {
        open = false;
        if (active[who] > 0) {
          out += fmt::format("    deactivate {}\n", who);
          --active[who];
        }
      }
    } else if (e.kind == "wait") {
      if (auto j = next_in_lane(i, true)) {
        out += fmt::format("    {}->>{}: {}\n", who, TargetId(events[*j].target),
                           Clean(StepLabel(events[*j])));
        requested.insert(*j);
      }
      out += fmt::format("    Note over {},{}: {}\n", who, TargetId(e.target),
                         NoteText("waits: " + e.detail));
    } else if (e.kind == "hook") {
      // A long gap after a hook is the hook holding the consumer there (--hold-ms).
      std::string gap;
      if (auto j = next_in_lane(i, false); j && options.timings) {
        int64_t us = events[*j].at_us - e.at_us;
        if (us >= kGapWorthNotingUs) gap = fmt::format(", its next step {} ms later", RoundMs(us));
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
      while (active[who] > 0) {  // its open transaction died with it
        out += fmt::format("    deactivate {}\n", who);
        --active[who];
      }
    } else if (e.kind == "recover") {
      out += fmt::format("    Note over DB: {}\n",
                         NoteText(text("recovery on the next open: " + e.detail)));
    } else if (e.kind == "send" || e.kind == "reconcile") {
      out += fmt::format("    {}->>Email: {}\n", who, Clean(text(e.detail)));
      out += fmt::format("    Email-->>{}: {}\n", who, Clean(e.result.empty() ? "ok" : e.result));
    } else if (e.kind == "outcome") {
      out += fmt::format("    Note over {}: outcome: {}\n", who, Clean(e.detail));
    } else if (e.kind == "lock") {
      // Where a write lock was taken and released: the activation bar of the open
      // transaction already shows it; the times are in the trace and the JSON.
    } else {
      out += fmt::format("    Note over {}: {}\n", who,
                         NoteText(text(fmt::format("{} {} {}", e.kind, e.detail, e.result))));
    }
  }
  return out;
}

}  // namespace dedupsim
