#include "views/mermaid.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <tuple>

#include "views/event_text.h"
#include "views/lanes.h"
#include "views/step_text.h"

namespace dedupsim {

namespace {

// Whether the n-th opening of a delivery, by process pid, is the n-th handing out of it by
// a broker's step, to that very process (pids: the processes each handing out went to).
bool HandedTo(const std::vector<int>& pids, size_t n, int pid) {
  return n < pids.size() && pids[n] == pid;
}

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

struct Participant {
  std::string id;
  std::string title;
  int order = 0;  // where it stands, left to right
  size_t first = 0;
  std::string group;  // consumers: the instance, so A's processes stand together, before B's
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

// Where a lane's participant stands, left to right.
int OrderOf(const std::string& lane_key, const std::string& actor) {
  if (lane_key == "producer") return 0;
  if (lane_key == "broker") return 1;
  if (lane_key == "operator") return 2;
  if (actor == kActorConsumer) return 3;
  if (lane_key == "dispatcher") return 4;
  if (lane_key == "database") return 5;
  if (lane_key == "email provider") return 6;
  if (lane_key == "setup") return 8;
  if (lane_key == "probe") return 9;
  return 4;
}

// A note drawn in the colour of its tone: right or wrong for the business, as the lines and
// the other pictures colour it (docs/pictures.md, "Colour").
std::string Toned(Tone tone, const std::string& lines) {
  if (tone == Tone::kRight) return "    rect rgb(200, 230, 201)\n" + lines + "    end\n";
  if (tone == Tone::kWrong) return "    rect rgb(255, 205, 210)\n" + lines + "    end\n";
  return lines;
}

}  // namespace

std::string MermaidDiagram(const std::vector<TraceEvent>& recorded, const MermaidOptions& options) {
  const std::vector<TraceEvent> events = CausalOrder(recorded);
  const std::vector<bool> autocommits = AutocommitWrites(events);
  ShortIds ids = options.ids_as_text ? ShortIds::Cut(events) : ShortIds(events);
  WordOptions words_options;
  words_options.timings = options.timings;
  words_options.pids = false;  // processes by their role: the same on every run
  auto words = [&](const TraceEvent& e) { return DescribeStep(e, ids, words_options); };
  // A payload hash (16 hex digits) is drawn as its first 8.
  auto text = [&](std::string_view s) {
    static const std::regex kHash("\\b([0-9a-f]{8})[0-9a-f]{8}\\b");
    return std::regex_replace(std::string(s), kHash, "$1");
  };

  // One participant per lane, each actor as itself.
  const std::vector<Lane> lanes = BuildLanes(events, ids, words_options);
  std::map<std::string, std::string> lane_ids;       // lane key -> participant id
  std::map<std::string, Participant> participants;  // by id
  std::map<std::string, int> processes;             // consumer instance -> its lanes
  for (const Lane& lane : lanes) {
    if (lane.actor == kActorConsumer) processes[lane.instance]++;
  }
  std::map<std::string, int> seen;  // consumer instance -> lanes named so far
  for (size_t i = 0; i < lanes.size(); ++i) {
    const Lane& lane = lanes[i];
    std::string id;
    std::string title = lane.title;
    static const std::map<std::string, std::string> kFixed = {
        {"producer", "Producer"}, {"broker", "Broker"},         {"operator", "Operator"},
        {"database", "DB"},       {"probe", "Check"},           {"setup", "Setup"},
        {"dispatcher", "Dispatcher"}, {"email provider", "Email"}};
    if (auto fixed = kFixed.find(lane.key); fixed != kFixed.end()) {
      id = fixed->second;
    } else {
      const int n = ++seen[lane.instance];
      id = "C" + Alnum(lane.instance) + (n > 1 ? fmt::format("p{}", n) : "");
      if (id == "C") id = "Cx";
      // Two processes of one instance (a killed child, then the parent): each named by its
      // role in the run ("child process 1", "main process"), not by its pid, which changes
      // from run to run.
      if (processes[lane.instance] > 1) title += " (" + ids.Process(lane.pid) + ")";
    }
    lane_ids[lane.key] = id;
    participants.try_emplace(id, Participant{id, title, OrderOf(lane.key, lane.actor), i,
                                             lane.actor == kActorConsumer ? lane.instance : ""});
  }
  // Each delivery's openings by consumers, in order, and the broker's own steps that handed
  // it out: the n-th handing out is drawn, in the order of events, as an arrow to the n-th
  // consumer that opened it, when that consumer's process is the one that took it from the
  // broker. An opening no broker step handed out to its process (a lesson that plays the
  // broker itself; a child process given a delivery its parent took, under --crash-mode
  // kill|exit or --instances processes) is the consumer's own receipt, as its note, and the
  // handing out the broker's own note.
  using Numbered = std::tuple<std::string, int, int>;  // key, copy, delivery
  struct Opening {
    std::string lane;
    int pid = 0;
    size_t index = 0;  // the opening's event
  };
  std::map<Numbered, std::vector<Opening>> taken;
  std::map<Numbered, std::vector<int>> handed_to_pid;  // the processes that took it, in order
  for (size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    if (e.kind == "broker" && e.op == "deliver") {
      handed_to_pid[{e.key, ids.CopyShown(e), e.delivery}].push_back(e.pid);
    }
    if (e.kind == "sql" && LaneKey(e) != "email provider") {
      participants.try_emplace(TargetId(e.target),
                               Participant{TargetId(e.target), TargetTitle(e.target),
                                           5 + (e.target.empty() || e.target == "database" ? 0 : 1),
                                           i, ""});
    }
    if (e.kind == "recover" || IsServerSessionEnd(e)) participants.try_emplace("DB", Participant{"DB", "Database", 5, i, ""});
    if (e.kind == "send" || e.kind == "reconcile") {
      participants.try_emplace("Email", Participant{"Email", "Email provider", 6, i, ""});
    }
    if (e.kind == "open" && e.delivery > 0) {
      const std::string key = LaneKey(e);
      taken[{e.key, ids.CopyShown(e), e.delivery}].push_back(
          {lane_ids.count(key) ? lane_ids.at(key) : "Cx", e.pid, i});
    }
  }

  std::vector<Participant> ordered;
  for (const auto& [id, p] : participants) ordered.push_back(p);
  std::stable_sort(ordered.begin(), ordered.end(), [](const Participant& a, const Participant& b) {
    if (a.order != b.order) return a.order < b.order;
    if (a.group != b.group) return a.group < b.group;  // Consumer A before B
    return a.first < b.first;
  });

  std::string out;
  if (!options.title.empty()) out += fmt::format("%% {}\n", Clean(options.title));
  out += "sequenceDiagram\n";
  for (const Participant& p : ordered) {
    if (p.id == "Check") {
      // No parentheses or quotes in a box's title: Mermaid reads them as part of the colour.
      out += "    box rgb(238,238,238) the scenario's own reads, not a consumer\n";
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

  const LockNotes lock_notes = PlaceLockNotes(events);
  // A settle sent from another process than its consumer's (the main process for a child of
  // --instances processes), or before any consumer held its delivery, is the broker's step,
  // as on the other views' lanes (StepLaneKeys), said as the broker got it (WordsOnLane).
  const std::vector<std::string> step_lanes = StepLaneKeys(events);
  std::set<size_t> requested;  // statements whose request arrow was drawn at their wait
  std::map<std::string, int> active;
  std::map<std::string, bool> in_transaction;                       // per participant
  std::map<std::string, int> transaction_backend;                   // its BEGIN's backend
  std::map<Numbered, std::string> delivered_to;  // (key, copy, delivery) -> id
  std::map<Numbered, size_t> opened;  // openings drawn so far
  std::map<Numbered, size_t> handed;  // the broker's handings out drawn so far
  // Openings whose handing out was not drawn as an arrow to them, another lane having
  // stepped between the two: the receipt is the consumer's own note, where it happened.
  std::set<std::pair<Numbered, size_t>> received_apart;
  auto next_in_lane = [&](size_t i, bool sql_only) -> std::optional<size_t> {
    for (size_t j = i + 1; j < events.size(); ++j) {
      if (LaneKey(events[j]) != LaneKey(events[i])) continue;
      if (!sql_only || events[j].kind == "sql") return j;
    }
    return std::nullopt;
  };

  // A call to the email provider is one step, recorded when it returned: the provider's own
  // steps made during it (a run of them, right before the call's step, in its process) come
  // first in the record. The request is drawn before them, the answer at the call's step,
  // so the provider is never drawn working before it was asked.
  const std::map<size_t, size_t> asked_at = ProviderCallsAsked(events);
  std::set<size_t> asked;  // calls whose request was drawn

  for (size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    if (auto call = asked_at.find(i); call != asked_at.end()) {
      const TraceEvent& c = events[call->second];
      const std::string caller_key = LaneKey(c);
      const std::string caller = lane_ids.count(caller_key) ? lane_ids[caller_key] : "Cx";
      out += fmt::format("    {}->>Email: {}\n", caller, Clean(text(words(c).what)));
      asked.insert(call->second);
    }
    if (e.kind == "part" || e.kind == "clock" || e.kind == "waited" || e.kind == "reset") {
      out += across(NoteText(words(e).Text()));
      continue;
    }
    const std::string key = LaneKey(e);
    if (key.empty()) continue;
    const std::string who = lane_ids.count(key) ? lane_ids[key] : "Cx";
    const StepWords w = words(e);
    // A delivery's arrow: where the broker handed it out, to the consumer that opened it;
    // where no step of the broker's handed it out, the consumer's receipt, as its note.
    const Numbered numbered{e.key, ids.CopyShown(e), e.delivery};
    auto arrow = [&](const std::string& to) {
      delivered_to[numbered] = to;
      out += fmt::format("    Broker->>{}: {}\n", to, ids.DeliveryName(e));
    };
    if (e.kind == "open") {
      const size_t n = e.delivery > 0 ? opened[numbered]++ : 0;
      if (e.delivery > 0 &&
          (!HandedTo(handed_to_pid[numbered], n, e.pid) || received_apart.count({numbered, n}))) {
        delivered_to[numbered] = who;
        out += fmt::format("    Note over {}: {}\n", who, NoteText(w.what));
      }
      continue;
    }
    if (e.kind == "broker") {
      if (auto to = taken.find(numbered);
          e.op == "deliver" && to != taken.end() && handed[numbered] < to->second.size()) {
        const size_t n = handed[numbered]++;
        const Opening& opening = to->second[n];
        // An arrow ends where the consumer received it: only where no drawn step came
        // between the handing out and the receipt (nineteenth walkthrough: ack-deadline's B
        // drawn receiving m1 before A's outcome and ack, which came first; twentieth: batch-
        // ack's A drawn receiving m1 before the broker handed out m2 and m3, which came first).
        bool apart = false;
        for (size_t k = i + 1; k < opening.index && k < events.size() && !apart; ++k) {
          apart = !LaneKey(events[k]).empty();
        }
        if (opening.pid == e.pid && !apart) {
          arrow(opening.lane);
          continue;
        }
        if (opening.pid == e.pid) received_apart.insert({numbered, n});
      }
      auto to = delivered_to.find(numbered);
      if (e.op == "send" || e.op == "drop") {
        out += fmt::format("    {}->>Broker: {}\n", who, Clean(w.what));
        out += fmt::format("    Broker-{}{}: {}\n", e.op == "drop" ? "-x" : "->>", who,
                           Clean(w.result));
      } else if (e.op == "replay") {
        out += fmt::format("    Operator->>Broker: {}\n", Clean(w.what));
      } else if (IsSettle(e) && step_lanes[i] != "broker" && to != delivered_to.end()) {
        out += fmt::format("    {}{}Broker: {}\n", to->second, e.op == "ack-lost" ? "-x" : "->>",
                           Clean(w.what));
        // What came of the settle, said as the settle (`nack m1: sent (no reply)`), as
        // every view says it: never as if the broker sent the message.
        // An ack's own answer is plain, unless the ack was judged (one that silenced a case).
        if (!w.result.empty() && (e.op != "ack" || w.tone != Tone::kPlain)) {
          // Over the Broker only where the result is the simulated queue's own act (where it
          // put the message, at once); a real broker's client says what it sent and saw, the
          // consumer's words, over the consumer (eighteenth walkthrough: "nack m1: sent (no
          // reply)" and NATS's lost ack read as the broker's words, the lost ack 200 ms
          // before the server could have seen anything). A lost ack never reached the
          // broker: the queue's note says what it saw, no ack, and where the message went.
          const bool queue_said = SettleIsQueuesAct(e);
          const std::string said =
              e.op == "ack-lost" && queue_said
                  ? fmt::format("no ack for {}: {}", ids.Message(e), w.result)
                  : w.Text();
          out += Toned(w.tone, fmt::format("    Note over {}: {}{}\n",
                                           queue_said ? "Broker" : to->second, NoteText(said),
                                           ToneMark(w.tone)));
        }
      } else {
        // Judged as every view judges it (NATS's give-up silenced a message: wrong).
        out += Toned(w.tone, fmt::format("    Note over Broker: {}{}\n",
                                         NoteText(WordsOnLane(e, w, "broker").Text()),
                                         ToneMark(w.tone)));
      }
      continue;
    }
    if (e.kind == "sql") {
      if (key == "email provider") {
        // The provider's own bookkeeping, in its own store: its steps, not the consumer's.
        out += fmt::format("    Note over {}: {}\n", who, NoteText(w.Text()));
        continue;
      }
      const std::string target = TargetId(e.target);
      if (!requested.count(i)) {
        out += fmt::format("    {}->>{}: {}\n", who, target, Clean(StepLabel(e)));
      }
      const bool ok = e.error.empty();
      bool& open = in_transaction[who + "/" + target];
      int& open_backend = transaction_backend[who + "/" + target];
      std::string result = w.result;
      // A write outside a transaction (or on another connection of the same consumer) is
      // committed by itself, at once.
      const bool in_open = open && OnConnectionOf(open_backend, e);
      if (autocommits[i]) result += " (autocommit)";
      result = WithLockNote(result, lock_notes, i);  // "..., write lock taken"
      out += fmt::format("    {}-->>{}: {}\n", target, who, Clean(text(ids.Shorten(result))));
      if (IsBegin(e) && ok) {
        open = true;
        open_backend = e.backend;
        out += fmt::format("    activate {}\n", who);
        ++active[who];
      } else if (in_open && (IsCommit(e) || IsRollback(e))) {
        // A COMMIT the database refused (PostgreSQL's aborted block) ended it too.
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
      out += fmt::format("    Note over {},{}: {}\n", who, TargetId(e.target), NoteText(w.what));
    } else if (e.kind == "hook") {
      // A hook that held its consumer while another consumer acted (--hold-ms) says how long
      // it held. Decided by the events, not by the gap's size: a loaded machine stretches
      // any gap, and the same options must draw the same diagram.
      std::string gap;
      if (auto j = next_in_lane(i, false); j && options.timings) {
        bool another_acted = false;
        for (size_t k = i + 1; k < *j && !another_acted; ++k) {
          another_acted = ActorOf(events[k]) == kActorConsumer && LaneKey(events[k]) != key;
        }
        if (another_acted) {
          gap = fmt::format(", its next step {} later", MsWord(events[*j].at_us - e.at_us));
        }
      }
      out += fmt::format("    Note over {}: {}{}\n", who, Clean(w.what), gap);
    } else if (e.kind == "crash" || e.kind == "stand" || e.kind == "died" ||
               (e.kind == "session-ended" && ActorOf(e) != kActorDatabase)) {
      out += fmt::format("    Note over {}: {}\n", who, NoteText(text(w.Text())));
      if (e.kind == "died" || e.kind == "session-ended") {
        while (active[who] > 0) {  // its open transaction died with it
          out += fmt::format("    deactivate {}\n", who);
          --active[who];
        }
      }
    } else if (e.kind == "recover" || e.kind == "session-ended") {
      out += fmt::format("    Note over DB: {}\n", NoteText(text(w.Text())));
      // The server ended a session (IsServerSessionEnd): the transaction of its owner, if
      // still drawn open (a stopped process's), ended there.
      if (IsServerSessionEnd(e)) {
        const std::string owner_key = LaneOfBackend(events, i, e.backend);
        if (auto owner = lane_ids.find(owner_key); owner != lane_ids.end()) {
          while (active[owner->second] > 0) {
            out += fmt::format("    deactivate {}\n", owner->second);
            --active[owner->second];
          }
        }
      }
    } else if (e.kind == "send" || e.kind == "reconcile") {
      if (!asked.count(i)) out += fmt::format("    {}->>Email: {}\n", who, Clean(text(w.what)));
      out += fmt::format("    Email-->>{}: {}\n", who, Clean(w.result.empty() ? "ok" : w.result));
    } else if (e.kind == "outcome") {
      out += Toned(w.tone, fmt::format("    Note over {}: {}{}\n", who, Clean(w.Text()),
                                       ToneMark(w.tone)));
    } else if (e.kind == "lock") {
      // Said with the statement it came with (its result); a release at a close alone.
      if (lock_notes.alone.count(i)) {
        out += fmt::format("    Note over {},{}: {}\n", who, TargetId(e.target), NoteText(w.Text()));
      }
    } else {
      out += Toned(w.tone, fmt::format("    Note over {}: {}\n", who, NoteText(text(w.Text()))));
    }
  }
  return out;
}

}  // namespace dedupsim
