#include "views/step_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <regex>
#include <set>

#include "views/event_text.h"

namespace dedupsim {

std::string StepLabel(const TraceEvent& e) {
  if (e.op.empty()) return "SQL";
  if (e.op == kOpRelease || e.op == kOpRollbackTo) return e.op + " SAVEPOINT";
  return e.table.empty() ? e.op : fmt::format("{} {}", e.op, e.table);
}

bool IsBegin(const TraceEvent& e) { return IsSqlOp(e, "BEGIN"); }
bool IsCommit(const TraceEvent& e) { return IsSqlOp(e, "COMMIT"); }
bool IsRollback(const TraceEvent& e) { return IsSqlOp(e, "ROLLBACK"); }
bool IsWrite(const TraceEvent& e) {
  return IsSqlOp(e, "INSERT") || IsSqlOp(e, "UPDATE") || IsSqlOp(e, "DELETE");
}

bool OnConnectionOf(int begin_backend, const TraceEvent& e) {
  return begin_backend == 0 || e.backend == 0 || e.backend == begin_backend;
}

std::string MsWord(int64_t us) {
  // Under 10 ms as it rounds to a tenth (9.96 ms is "10 ms", not "10.0 ms").
  if (us < 9950) return fmt::format("{:.1f} ms", static_cast<double>(us) / 1000.0);
  return fmt::format("{} ms", std::llround(static_cast<double>(us) / 1000.0));
}

std::string DescribeResult(const TraceEvent& e, bool with_timings) {
  std::string result = e.result.empty() ? "ok" : e.result;
  if (IsSqlOp(e, "SELECT") && result == "ok") result = "no row";
  if (e.busy_calls > 0) {
    if (with_timings) {
      result += ", waited " + MsWord(e.waited_us);
    } else {
      result += ", waited";
    }
  }
  return result;
}

ShortIds::ShortIds(const std::vector<TraceEvent>& events) {
  // The recorded order (seq), where every event has one; else the order given.
  std::vector<const TraceEvent*> recorded;
  bool all_stamped = true;
  for (const TraceEvent& e : events) {
    recorded.push_back(&e);
    all_stamped = all_stamped && e.seq != 0;
  }
  if (all_stamped) {
    std::stable_sort(recorded.begin(), recorded.end(),
                     [](const TraceEvent* a, const TraceEvent* b) { return a->seq < b->seq; });
  }
  for (const TraceEvent* e : recorded) {
    if (!e->key.empty() && !keys_.count(e->key)) {
      keys_.emplace(e->key, fmt::format("m{}", keys_.size() + 1));
    }
  }
  // The other ids named now, in that order (fifteenth-round walkthrough: business-key's
  // timeline, which shortens lane by lane, named its orders and books otherwise than the
  // diagram and the page of the same run).
  for (const TraceEvent* e : recorded) {
    for (const std::string* text : {&e->detail, &e->result, &e->value, &e->waited_on}) {
      if (!text->empty()) Shorten(*text);
    }
  }
  NameProcessesOf(events);
  CountCopiesOf(events);
}

void ShortIds::CountCopiesOf(const std::vector<TraceEvent>& events) {
  for (const TraceEvent& e : events) {
    if (!e.key.empty() && e.copy > 0) copies_[e.key] = std::max(copies_[e.key], e.copy);
  }
}

int ShortIds::CopyShown(const TraceEvent& e) const {
  if (e.copy <= 0) return 0;
  const auto copies = copies_.find(e.key);
  const bool several = full_ ? e.copy > 1 : copies != copies_.end() && copies->second > 1;
  return several ? e.copy : 0;
}

std::string ShortIds::Message(const TraceEvent& e) const {
  const int copy = CopyShown(e);
  return copy > 0 ? fmt::format("{} copy {}", Name(e.key), copy) : Name(e.key);
}

std::string ShortIds::DeliveryName(const TraceEvent& e) const {
  const std::string message = Message(e);
  return message == Name(e.key) ? fmt::format("{} delivery {}", message, e.delivery)
                                : fmt::format("{}, delivery {}", message, e.delivery);
}

void ShortIds::NameProcessesOf(const std::vector<TraceEvent>& events) {
  // The main process runs the set-up, the broker and the scenario's checks: the first step
  // of an actor other than a consumer is its (the first step at all where there is none).
  for (const TraceEvent& e : events) {
    if (e.pid != 0 && ActorOf(e) != kActorConsumer) {
      processes_.emplace(e.pid, "main process");
      break;
    }
  }
  int children = 0;
  int backends = 0;
  for (const TraceEvent& e : events) {
    if (e.pid != 0 && !processes_.count(e.pid)) {
      processes_.emplace(e.pid, processes_.empty() ? std::string("main process")
                                                   : fmt::format("child process {}", ++children));
    }
  }
  // A PostgreSQL backend a wait was blocked by is named after the actor whose connection it
  // is, read from the steps that carry it as their backend: "Consumer A", with its process
  // where the instance ran in more than one ("Consumer A (child process 2)"). "backend N"
  // when no step carries it, or steps of more than one actor do.
  std::map<std::string, std::set<int>> pids_of;  // instance -> the processes it ran in
  for (const TraceEvent& e : events) {
    if (e.pid != 0) pids_of[e.instance].insert(e.pid);
  }
  for (const TraceEvent& e : events) {
    if (e.blocked_by == 0 || processes_.count(e.blocked_by)) continue;
    std::string owner;
    bool one = true;
    for (const TraceEvent& o : events) {
      // The database's own step on a session (the server ending it) is not the session's.
      if (o.backend != e.blocked_by || ActorOf(o) == kActorDatabase) continue;
      std::string name = ActorName(o);
      if (ActorOf(o) == kActorConsumer && pids_of[o.instance].size() > 1 &&
          processes_.count(o.pid)) {
        name += " (" + processes_.at(o.pid) + ")";
      }
      one = one && (owner.empty() || owner == name);
      owner = std::move(name);
    }
    if (!owner.empty() && one) owners_.emplace(e.blocked_by, owner);
    processes_.emplace(e.blocked_by, !owner.empty() && one
                                         ? owner
                                         : fmt::format("backend {}", ++backends));
  }
}

std::string ShortIds::BackendOwner(int backend) const {
  auto it = owners_.find(backend);
  return it == owners_.end() ? std::string() : it->second;
}

std::string ShortIds::Process(int pid) const {
  if (full_) return fmt::format("pid {}", pid);
  auto it = processes_.find(pid);
  return it == processes_.end() ? std::string("pid N") : it->second;
}

std::string ShortIds::NameProcesses(std::string_view text) const {
  if (full_) return std::string(text);
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (text.substr(i, 4) == "pid " && i + 4 < text.size() &&
        std::isdigit(static_cast<unsigned char>(text[i + 4]))) {
      size_t end = i + 4;
      int pid = 0;
      while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end])) &&
             pid < 100000000) {
        pid = pid * 10 + (text[end++] - '0');
      }
      out += Process(pid);
      i = end;
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

namespace {

bool IsUuidAt(const std::string& s, size_t at) {
  static const std::regex kUuid("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  return s.size() >= at + 36 && std::regex_match(s.substr(at, 36), kUuid);
}

// "78833635…" for a UUID; a key that starts with one keeps what follows it.
std::string CutId(const std::string& key) {
  if (!IsUuidAt(key, 0)) return key;
  return key.substr(0, 8) + "\u2026" + key.substr(36);
}

}  // namespace

ShortIds ShortIds::Cut(const std::vector<TraceEvent>& events) {
  ShortIds ids({});
  ids.cut_ = true;
  for (const TraceEvent& e : events) {
    if (!e.key.empty()) ids.keys_.emplace(e.key, CutId(e.key));
  }
  ids.NameProcessesOf(events);
  ids.CountCopiesOf(events);
  return ids;
}

std::string ShortIds::Name(const std::string& key) const {
  if (full_) return key;
  auto it = keys_.find(key);
  return it == keys_.end() ? key : it->second;
}

std::vector<std::string> ShortIds::Legend() const {
  std::vector<std::pair<std::string, std::string>> byname;
  for (const auto& [key, name] : keys_) byname.emplace_back(name, key);
  std::sort(byname.begin(), byname.end(), [](const auto& a, const auto& b) {
    return a.first.size() != b.first.size() ? a.first.size() < b.first.size() : a.first < b.first;
  });
  std::vector<std::string> out;
  for (const auto& [name, key] : byname) out.push_back(name + " = " + key);
  return out;
}

std::string ShortIds::Shorten(std::string_view text) {
  static const std::regex kUuid("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  // A known key whole first, the longest first: "<id>/StockReserved" is a message of its
  // own (m2), not m1 with a suffix.
  std::string s(text);
  if (full_) return s;
  if (longest_first_.empty()) {
    for (const auto& [key, name] : keys_) longest_first_.push_back(key);
    std::sort(longest_first_.begin(), longest_first_.end(),
              [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  }
  for (const std::string& key : longest_first_) {
    if (key.size() <= 36) break;  // a plain UUID key: the pass below names it
    for (size_t at = s.find(key); at != std::string::npos; at = s.find(key, at)) {
      const std::string& name = keys_.at(key);
      s.replace(at, key.size(), name);
      at += name.size();
    }
  }
  std::string out;
  size_t last = 0;
  for (auto it = std::sregex_iterator(s.begin(), s.end(), kUuid); it != std::sregex_iterator();
       ++it) {
    out += s.substr(last, static_cast<size_t>(it->position()) - last);
    const std::string id = it->str();
    if (auto k = keys_.find(id); k != keys_.end()) {
      out += k->second;
    } else {
      auto [entry, added] = others_.try_emplace(id, "");
      if (added) entry->second = cut_ ? CutId(id) : fmt::format("id-{}", others_.size());
      out += entry->second;
    }
    last = static_cast<size_t>(it->position() + it->length());
  }
  return out + s.substr(last);
}

}  // namespace dedupsim
