#include "views/html_steps.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "views/color.h"
#include "views/event_text.h"
#include "views/lanes.h"
#include "views/step_text.h"
#include "views/table_diff.h"

namespace dedupsim {

namespace {

using Json = nlohmann::ordered_json;

// A table's cell as the page shows it: ids shortened as in every view, and a process named by
// its role in the run, never by its pid (orphan-claim's Owner, "A (pid 30825)", is "A (child
// process 1)"), so a rehearsal's page is the lecture's.
std::string CellText(const std::string& cell, ShortIds& ids) {
  return ids.NameProcesses(ids.Shorten(cell));
}

Json TablesJson(const TablesSnapshot& snap, ShortIds& ids) {
  Json tables = Json::array();
  for (const TableState& t : snap.tables) {
    Json rows = Json::array();
    for (const auto& row : t.rows) {
      Json cells = Json::array();
      for (const std::string& cell : row) cells.push_back(CellText(cell, ids));
      rows.push_back(cells);
    }
    tables.push_back({{"store", t.store},
                      {"name", t.name},
                      {"columns", t.columns},
                      {"rows", rows},
                      {"total", t.total_rows}});
  }
  return tables;
}

// What changed from before to now, per table ("store/name"), as the page draws it.
Json DiffJson(const TablesSnapshot* before, const TablesSnapshot& now, ShortIds& ids) {
  Json out = Json::object();
  for (const TableState& t : now.tables) {
    const TableState* was = nullptr;
    if (before != nullptr) {
      for (const TableState& b : before->tables) {
        if (b.store == t.store && b.name == t.name) was = &b;
      }
    }
    if (before == nullptr) continue;  // the first read: nothing to compare with
    const TableDiff diff = DiffTable(was, t);
    if (diff.empty()) continue;
    Json changed = Json::array();
    for (const auto& [row, columns] : diff.changed) changed.push_back({row, columns});
    Json deleted = Json::array();
    for (const auto& row : diff.deleted) {
      Json cells = Json::array();
      for (const std::string& cell : row) cells.push_back(CellText(cell, ids));
      deleted.push_back(cells);
    }
    out[t.store + "/" + t.name] = {
        {"added", diff.added}, {"changed", changed}, {"deleted", deleted}};
  }
  // A table that is gone (a store removed by a reset): its rows were deleted. Its rows
  // are not in this read: the page shows them struck out, under the table's name.
  if (before == nullptr) return out;
  for (const TableState& b : before->tables) {
    bool still = false;
    for (const TableState& t : now.tables) still = still || (t.store == b.store && t.name == b.name);
    if (still || b.rows.empty() || static_cast<int64_t>(b.rows.size()) < b.total_rows) continue;
    Json deleted = Json::array();
    for (const auto& row : b.rows) {
      Json cells = Json::array();
      for (const std::string& cell : row) cells.push_back(CellText(cell, ids));
      deleted.push_back(cells);
    }
    out[b.store + "/" + b.name] = {{"added", Json::array()},
                                   {"changed", Json::array()},
                                   {"deleted", deleted},
                                   {"gone", true},
                                   {"columns", b.columns}};
  }
  return out;
}

// One state per actor: what it holds or waits for, as far as the events tell.
struct ActorLocks {
  bool in_transaction = false;
  bool holds = false;
  std::string waits;         // WaitTarget of a wait not yet over
  // PostgreSQL: its process died with its transaction open and a wait on it (another's
  // statement held by it): its session still holds its locks on the server, until the
  // server ends it (its release noted, the waiter's statement answered).
  bool dead = false;
};

// The database a store's statements ran on: the run's backend for the lesson's database; a
// side store (the email provider's records, the cache) is always a SQLite file of its own
// (fifteenth walkthrough: on PostgreSQL the provider's write lock was said as row locks).
std::string StoreBackend(const std::string& store, const std::string& backend) {
  return store.empty() || store == "database" ? backend : "sqlite";
}

std::string LockFact(const std::string& who, const ActorLocks& l, const std::string& target,
                     const std::string& backend) {
  const std::string where =
      target.empty() || target == "database" ? "" : fmt::format(" of the {}", target);
  // A waiter that holds locks still holds them (PostgreSQL: B waits on a row with its Inbox
  // key held): both said, in one fact.
  const std::string waits =
      l.waits.empty() ? "" : fmt::format("{}waits for {}", l.holds ? " and " : "", l.waits);
  if (l.dead) {
    return fmt::format(
        "{} is dead; its session on the server still holds the locks of the rows and keys it "
        "wrote{}, until the server ends it",
        who, where);
  }
  if (l.holds) {
    return backend == "postgres"
               ? fmt::format("{} holds the locks of the rows and keys it wrote{}{}", who, where,
                             waits)
               : fmt::format("{} holds the write lock{}{}", who, where, waits);
  }
  if (!l.waits.empty()) return fmt::format("{} {}", who, waits);
  if (l.in_transaction) return fmt::format("{} is in a transaction{}", who, where);
  return "";
}

// What a step was, in a line a class can read: the actor's name, then DescribeStep's words.
std::string StepText(const TraceEvent& e, const std::string& who, const StepWords& w) {
  if (e.kind == "part" || e.kind == "clock" || e.kind == "waited") return w.Text();
  if (e.kind == "reset") return "set-up: " + w.Text();
  if (e.kind == "sql") return fmt::format("{}: {} → {}", who, w.what, w.result);
  if (e.kind == "open") return fmt::format("{} {}", who, w.what);
  return fmt::format("{}: {}", who, w.Text());
}

constexpr const char* kPage = R"html(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>dedupsim: step through</title>
<style>
* { box-sizing: border-box; }
body { margin: 0; font-family: 'DejaVu Sans', Verdana, Arial, sans-serif; font-size: 18px; color: #1b1b1b; background: #fafafa; height: 100vh; display: flex; flex-direction: column; }
header { padding: 8px 16px; background: #263238; color: #fff; display: flex; gap: 16px; align-items: center; }
header h1 { font-size: 20px; margin: 0; white-space: nowrap; }
header input { flex: 1; }
#counter { font-family: 'DejaVu Sans Mono', monospace; white-space: nowrap; }
main { flex: 1; display: flex; min-height: 0; }
#steps { width: 38%; overflow-y: auto; margin: 0; padding: 6px 0; list-style: none; border-right: 2px solid #cfd8dc; background: #fff; }
#steps li a { display: block; padding: 3px 12px; color: #263238; text-decoration: none; font-size: 16px; font-family: 'DejaVu Sans Mono', monospace; }
#steps li.section a { background: #eceff1; font-weight: bold; font-family: 'DejaVu Sans', sans-serif; }
#steps li.current a { background: #ffe082; font-weight: bold; }
#steps li.right a, #title.right, .right { color: #1b5e20; }
#steps li.wrong a, #title.wrong, .wrong { color: #b71c1c; }
#steps li.failed a, #title.failed { font-weight: bold; }
#steps li.probe a { color: #607d8b; font-style: italic; }
#panel { width: 62%; overflow-y: auto; padding: 10px 18px; }
#title { font-size: 22px; font-weight: bold; margin: 4px 0 6px; }
.facts { display: flex; gap: 14px; flex-wrap: wrap; margin: 6px 0; font-size: 17px; }
.facts div { background: #eceff1; padding: 4px 10px; border-radius: 4px; }
.note { color: #5d4037; font-style: italic; font-size: 16px; }
table { border-collapse: collapse; margin: 4px 0 12px; font-family: 'DejaVu Sans Mono', monospace; font-size: 16px; }
caption { text-align: left; font-weight: bold; font-family: 'DejaVu Sans', sans-serif; padding: 2px 0; }
th, td { border: 1px solid #b0bec5; padding: 2px 8px; max-width: 280px; white-space: normal; overflow-wrap: anywhere; }
th { background: #eceff1; overflow-wrap: normal; }
td.changed { background: #ffd54f; font-weight: bold; outline: 2px solid #ff6f00; }
tr.added td { background: #fff3c4; font-weight: bold; }
tr.deleted td { color: #78909c; text-decoration: line-through; background: #f5f5f5; }
.line { font-family: 'DejaVu Sans Mono', monospace; font-size: 16px; color: #37474f; margin: 2px 0 8px; white-space: pre-wrap; }
.line .right, .line .wrong { font-weight: bold; }
.keys { font-size: 16px; color: #cfd8dc; white-space: nowrap; }
</style>
</head>
<body>
<header><h1>dedupsim: step through</h1><input id="slider" type="range" min="0" value="0" aria-label="step"><span id="counter"></span><span class="keys">← → space, Home, End</span></header>
<main><ol id="steps"></ol><section id="panel"><div id="scenario" class="line"></div><div id="title"></div><div class="facts" id="facts"></div><div id="note" class="note"></div><div id="tables"></div></section></main>
<script type="application/json" id="data">@DATA@</script>
<script>
(function () {
  const data = JSON.parse(document.getElementById('data').textContent);
  const steps = data.steps;
  const list = document.getElementById('steps');
  const slider = document.getElementById('slider');
  slider.max = String(steps.length - 1);
  let current = 0;
  steps.forEach(function (s, i) {
    const li = document.createElement('li');
    const classes = [];
    if (s.titled) classes.push('section');
    if (s.tone) classes.push(s.tone);
    if (s.failed) classes.push('failed');
    if (s.probe) classes.push('probe');
    li.className = classes.join(' ');
    const a = document.createElement('a');
    a.href = '#step-' + (i + 1);
    a.textContent = (i + 1) + '. ' + s.text;
    a.addEventListener('click', function (ev) { ev.preventDefault(); show(i); });
    li.appendChild(a);
    list.appendChild(li);
  });
  function text(tag, t, cls) { const e = document.createElement(tag); e.textContent = t; if (cls) e.className = cls; return e; }
  function line(section) {
    const box = document.getElementById('scenario');
    box.innerHTML = '';
    box.appendChild(document.createTextNode(section.scenario + ': '));
    section.line.forEach(function (p) {
      box.appendChild(p.length > 1 ? text('span', p[0], p[1] ? 'right' : 'wrong') : document.createTextNode(p[0]));
    });
  }
  function show(i) {
    current = Math.max(0, Math.min(steps.length - 1, i));
    const s = steps[current];
    slider.value = String(current);
    document.getElementById('counter').textContent = 'step ' + (current + 1) + ' of ' + steps.length;
    line(data.sections[s.section]);
    const title = document.getElementById('title');
    title.textContent = (current + 1) + '. ' + s.text;
    title.className = [s.tone, s.failed ? 'failed' : ''].join(' ').trim();
    const facts = document.getElementById('facts');
    facts.innerHTML = '';
    const locks = s.facts.length ? s.facts : ['nobody holds a lock'];
    locks.forEach(function (l) { facts.appendChild(text('div', l, 'lock')); });
    Object.keys(s.deliveries).forEach(function (k) { var n = s.deliveries[k]; facts.appendChild(text('div', k + ': delivered ' + (n === 1 ? 'once' : n + ' times') + ' so far', 'delivery')); });
    document.getElementById('note').textContent = s.note || '';
    const box = document.getElementById('tables');
    box.innerHTML = '';
    const now = s.snapshot >= 0 ? data.snapshots[s.snapshot] : null;
    if (now) {
      now.tables.forEach(function (t) {
        const name = t.store + '/' + t.name;
        if (!data.sections[s.section].shown[name]) return;
        const diff = s.diff[name] || {added: [], changed: [], deleted: []};
        const changed = {};
        diff.changed.forEach(function (c) { changed[c[0]] = c[1]; });
        const table = document.createElement('table');
        table.dataset.table = t.name;
        table.appendChild(text('caption', (t.store === 'database' ? '' : t.store + ': ') + t.name + ' (' + t.total + (t.total === 1 ? ' row)' : ' rows)')));
        const head = document.createElement('tr');
        t.columns.forEach(function (c) { head.appendChild(text('th', c)); });
        table.appendChild(head);
        t.rows.forEach(function (r, ri) {
          const tr = document.createElement('tr');
          if (diff.added.indexOf(ri) >= 0) tr.className = 'added';
          r.forEach(function (v, ci) {
            const td = text('td', v);
            td.dataset.col = t.columns[ci];
            td.title = v;
            if (changed[ri] && changed[ri].indexOf(ci) >= 0) td.className = 'changed';
            tr.appendChild(td);
          });
          table.appendChild(tr);
        });
        diff.deleted.forEach(function (r) {
          const tr = document.createElement('tr');
          tr.className = 'deleted';
          r.forEach(function (v, ci) { const td = text('td', v); td.dataset.col = t.columns[ci]; td.title = 'deleted: ' + v; tr.appendChild(td); });
          table.appendChild(tr);
        });
        box.appendChild(table);
      });
      // A table removed with its store: its rows struck out under its name.
      Object.keys(s.diff).forEach(function (name) {
        const diff = s.diff[name];
        if (!diff.gone) return;
        const table = document.createElement('table');
        table.dataset.table = name.split('/')[1];
        const store = name.split('/')[0];
        table.appendChild(text('caption', (store === 'database' ? '' : store + ': ') + name.split('/')[1] + ' (removed)'));
        const head = document.createElement('tr');
        diff.columns.forEach(function (c) { head.appendChild(text('th', c)); });
        table.appendChild(head);
        diff.deleted.forEach(function (r) {
          const tr = document.createElement('tr');
          tr.className = 'deleted';
          r.forEach(function (v, ci) { const td = text('td', v); td.dataset.col = diff.columns[ci]; td.title = 'deleted: ' + v; tr.appendChild(td); });
          table.appendChild(tr);
        });
        box.appendChild(table);
      });
    }
    const items = list.children;
    for (let j = 0; j < items.length; j++) items[j].classList.toggle('current', j === current);
    items[current].scrollIntoView({block: 'nearest'});
    // What the step changed, brought into the panel's view when the tables are taller.
    const first = document.querySelector('#tables td.changed, #tables tr.added td');
    if (first) first.scrollIntoView({block: 'nearest', inline: 'nearest'});
    if (location.hash !== '#step-' + (current + 1)) history.replaceState(null, '', '#step-' + (current + 1));
  }
  document.addEventListener('keydown', function (ev) {
    if (ev.target === slider && (ev.key === 'ArrowRight' || ev.key === 'ArrowLeft')) ev.preventDefault();
    if (ev.key === 'ArrowRight' || ev.key === ' ' || ev.key === 'PageDown') { show(current + 1); ev.preventDefault(); }
    else if (ev.key === 'ArrowLeft' || ev.key === 'PageUp') { show(current - 1); ev.preventDefault(); }
    else if (ev.key === 'Home') { show(0); ev.preventDefault(); }
    else if (ev.key === 'End') { show(steps.length - 1); ev.preventDefault(); }
  });
  slider.addEventListener('input', function () { show(Number(slider.value)); });
  function fromHash() { const m = /^#step-(\d+)$/.exec(location.hash); return m ? Number(m[1]) - 1 : 0; }
  window.addEventListener('hashchange', function () { show(fromHash()); });
  window.dedupsimShow = show;
  show(fromHash());
})();
</script>
</body>
</html>
)html";

Json PageData(const std::vector<HtmlSection>& sections) {
  Json steps = Json::array();
  Json snapshots = Json::array();
  Json section_list = Json::array();
  for (size_t si = 0; si < sections.size(); ++si) {
    const HtmlSection& section = sections[si];
    // The line in pieces, each judged figure with its mark and verdict, as the terminal and
    // the timeline show it: [text] or [text, correct].
    Json line = Json::array();
    for (const JudgedPiece& p : JudgedPieces(section.line, section.marks)) {
      line.push_back(p.correct ? Json::array({p.text, *p.correct}) : Json::array({p.text}));
    }
    const std::vector<TraceEvent> events = CausalOrder(section.events);
    // The section's tables: those a statement of its steps named, or that hold a row at
    // one of its steps; the others (another lesson's AuditLog in `run everything`) are
    // left out of it.
    Json shown = Json::object();
    for (const TraceEvent& e : events) {
      if (e.kind == "sql" && !e.table.empty()) shown[(e.target.empty() ? "database" : e.target) + "/" + e.table] = true;
    }
    for (const TablesSnapshot& snap : section.snapshots) {
      for (const TableState& t : snap.tables) {
        if (t.total_rows > 0) shown[t.store + "/" + t.name] = true;
      }
    }
    section_list.push_back({{"scenario", section.scenario}, {"line", line}, {"shown", shown}});
    ShortIds ids = section.ids_as_text ? ShortIds::Cut(events) : ShortIds(events);
    std::map<std::string, std::string> titles;
    for (const Lane& lane : BuildLanes(events, ids, kPictureWords)) titles[lane.key] = lane.title;
    // A consumer's ack (or the ack it lost) is its own step, as in the other pictures.
    const std::vector<std::string> lane_keys = StepLaneKeys(events);
    const std::vector<bool> autocommits = AutocommitWrites(events);
    // Snapshots by the event (seq) they were read after.
    std::map<int64_t, size_t> by_seq;
    std::vector<const TablesSnapshot*> own;  // this section's, by index - first
    const size_t first_snapshot = snapshots.size();
    for (const TablesSnapshot& snap : section.snapshots) {
      by_seq[snap.seq] = snapshots.size();
      own.push_back(&snap);
      snapshots.push_back({{"tables", TablesJson(snap, ids)}, {"unreadable", snap.unreadable}});
    }
    // The tables shown after a step: those read after it, or after a later-shown step
    // recorded earlier. A statement is recorded when it ends, and the pictures show it
    // where it began (and a COMMIT before the statement it let go on), so a COMMIT shown
    // before B's steps may have been recorded after them, its tables read after B's
    // COMMIT: the earliest read among this step and those shown after it is the one that
    // shows nothing a later-shown step did.
    std::vector<int64_t> shown_seq(events.size(), 0);
    {
      int64_t earliest = 0;
      for (size_t k = events.size(); k-- > 0;) {
        if (events[k].seq != 0 && by_seq.count(events[k].seq)) {
          earliest = earliest == 0 ? events[k].seq : std::min(earliest, events[k].seq);
          shown_seq[k] = earliest;
        }
      }
    }
    std::vector<std::string> actors;                     // in order of first appearance
    std::map<std::string, std::map<std::string, ActorLocks>> locks;  // lane -> target -> state
    std::map<std::string, int> deliveries;              // short id -> delivery number
    int64_t last_snapshot = -1;
    // Commits run in another process since the last read: their changes show at the next
    // step read after, which must say whose they are.
    std::vector<std::string> unread_commits;
    std::vector<int> unread_others;  // processes with other steps since the last read
    bool first = true;
    const std::map<size_t, size_t> asked_at = ProviderCallsAsked(events);
    // A step's own words: the fields every step has, whatever made it.
    auto new_step = [&](const std::string& kind, bool titled, const std::string& text,
                        Tone tone, bool failed, bool probe) {
      Json step;
      step["section"] = si;
      step["kind"] = kind;
      step["titled"] = first || titled;
      first = false;
      step["text"] = text;
      step["tone"] = ToneClass(tone);
      step["failed"] = failed;
      step["probe"] = probe;
      return step;
    };
    for (size_t event_index = 0; event_index < events.size(); ++event_index) {
      const TraceEvent& e = events[event_index];
      const std::string& key = lane_keys[event_index];
      const std::string who = titles.count(key) ? titles[key] : ActorName(e);
      // A call to the email provider is asked before the provider's own steps for it (its
      // step, recorded when it returned, says the answer): a step of its own, with nothing
      // changed or read since the step before.
      if (auto call = asked_at.find(event_index); call != asked_at.end()) {
        const TraceEvent& c = events[call->second];
        const std::string& caller_key = lane_keys[call->second];
        const std::string caller = titles.count(caller_key) ? titles[caller_key] : ActorName(c);
        const bool same_section = !steps.empty() && steps.back()["section"] == si;
        Json asked = new_step(c.kind, false,
                              fmt::format("{} asks the email provider: {}", caller,
                                          DescribeStep(c, ids, kPictureWords).what),
                              Tone::kPlain, false, false);
        asked["facts"] = same_section ? steps.back()["facts"] : Json::array();
        asked["deliveries"] = same_section ? steps.back()["deliveries"] : Json::object();
        asked["snapshot"] = last_snapshot;
        asked["diff"] = Json::object();
        asked["note"] = "the provider's steps that follow are its work on this call; the answer comes after them";
        steps.push_back(asked);
      }
      if (!key.empty() && !locks.count(key)) actors.push_back(key);
      auto& mine = key.empty() ? locks[""] : locks[key];
      const std::string target = e.target.empty() ? "database" : e.target;
      // The lane whose session a server's step ended (the database's step about it), and
      // its title: that session's locks were released there.
      std::string ended_lane;
      if (IsServerSessionEnd(e)) ended_lane = LaneOfBackend(events, event_index, e.backend);
      const std::string ended_who =
          ended_lane.empty() ? "" : (titles.count(ended_lane) ? titles[ended_lane] : ended_lane);
      if (e.kind == "sql") {
        ActorLocks& l = mine[target];
        const std::string was_waiting = l.waits;
        l.waits.clear();
        const bool ok = e.error.empty();
        // PostgreSQL: a statement that waited on a dead holder's session and went through:
        // the server had ended that session by its answer (its locks gone).
        if (ok && !was_waiting.empty()) {
          for (auto& [lane, stores] : locks) {
            const std::string title = titles.count(lane) ? titles[lane] : lane;
            for (auto& [store, d] : stores) {
              if (d.dead && was_waiting.find("held by " + title) != std::string::npos) d = {};
            }
          }
        }
        if (IsBegin(e) && ok) l.in_transaction = true;
        // PostgreSQL: a write inside a transaction holds the locks of the rows and keys it
        // wrote until the transaction ends, so one that wrote no row (an ON CONFLICT DO
        // NOTHING that met the key) holds nothing. SQLite's write lock is what its
        // connection noted it took and released (the "lock" events), failed statements
        // included: a duplicate INSERT took the lock before it met the key.
        const bool wrote = StoreBackend(target, section.backend) == "postgres" && e.rows != 0;
        if (IsWrite(e) && ok && l.in_transaction && wrote) l.holds = true;
        if (IsCommit(e) || IsRollback(e)) {
          const bool holds = l.holds && StoreBackend(target, section.backend) != "postgres";
          l = {};
          l.holds = holds;  // SQLite: until its release is noted (stamped before the step)
        }
      } else if (e.kind == "lock") {
        ActorLocks& l = mine[target];
        if (e.detail == "write lock taken") {
          l.holds = true;
          l.waits.clear();  // it has the lock: its wait is over
        }
        if (e.detail == "write lock released") l.holds = false;
      } else if (e.kind == "wait") {
        mine[target].waits = WaitTarget(e, ids, kPictureWords);
      } else if (e.kind == "died" && section.backend == "postgres") {
        // PostgreSQL: the server frees a dead process's locks when it sees its connection
        // close, after the death: while another's statement still waits on it, its session
        // holds them (until the server's release is noted or that statement returns).
        const std::string named = "held by " + who;
        bool waited_on = false;
        for (const auto& [lane, stores] : locks) {
          for (const auto& [store, l] : stores) {
            waited_on = waited_on || (lane != key && l.waits.find(named) != std::string::npos);
          }
        }
        for (auto& [store, l] : mine) {
          const bool held = waited_on && (l.holds || l.in_transaction);
          l = {};
          l.dead = held;
        }
      } else if (e.kind == "died" || (e.kind == "session-ended" && !IsServerSessionEnd(e))) {
        mine.clear();
      }
      if (!ended_lane.empty()) locks[ended_lane].clear();
      // The holder let go (its transaction ended, or its process or session did): a wait
      // that named it is no longer "held by" it; the waiter is in its transaction until its
      // statement returns (PostgreSQL wakes it; its own step says how long it waited). On
      // PostgreSQL a death lets go only when the server ends the dead session (above).
      const bool let_go = (e.kind == "died" && section.backend != "postgres") ||
                          (e.kind == "session-ended" && !IsServerSessionEnd(e)) ||
                          (e.kind == "sql" && e.error.empty() && (IsCommit(e) || IsRollback(e)));
      if (let_go || !ended_lane.empty()) {
        const std::string named = "held by " + (ended_lane.empty() ? who : ended_who);
        const std::string& holder = ended_lane.empty() ? key : ended_lane;
        for (auto& [lane, stores] : locks) {
          if (lane == holder) continue;
          for (auto& [store, l] : stores) {
            if (l.waits.find(named) != std::string::npos) l.waits.clear();
          }
        }
      }
      // A sub-run sends messages of its own: the counts of the one before are not its (nor
      // a dead process's session: a sub-run starts afresh).
      if (e.kind == "part") {
        deliveries.clear();
        for (auto& [lane, stores] : locks) {
          for (auto& [store, l] : stores) {
            if (l.dead) l = {};
          }
        }
      }
      if ((e.kind == "open" || (e.kind == "broker" && e.op == "deliver")) && e.delivery > 0) {
        // The message's count so far: a copy still at work on an earlier delivery does not
        // take it back (concurrent: A's delivery 1 opens after B's delivery 2 was handed out).
        int& count = deliveries[ids.Message(e)];
        count = std::max(count, e.delivery);
      }
      // A lock take or release is part of the statement it came with: not a step of its own
      // (its state shows at the statement: the COMMIT's changes appear at the COMMIT).
      if (e.kind == "lock") continue;

      StepWords words = WordsOnLane(e, DescribeStep(e, ids, kPictureWords), key);
      // A write that committed by itself says so, as in the diagram and the timeline (it is
      // not part of the transaction open beside it).
      if (autocommits[event_index]) words.result += " (autocommit)";
      // The step as the diagram's note and the timeline's card say it, its ✓ or ✗ included.
      Json step = new_step(e.kind, e.kind == "part" || e.kind == "reset",
                           StepText(e, who, words) + ToneMark(words.tone), words.tone,
                           words.failed, ActorOf(e) == kActorProbe);
      Json facts = Json::array();
      for (const std::string& actor : actors) {
        const std::string title = titles.count(actor) ? titles[actor] : actor;
        std::vector<std::string> said;
        for (const auto& [store, l] : locks[actor]) {
          std::string fact = LockFact(title, l, store, StoreBackend(store, section.backend));
          if (!fact.empty()) said.push_back(fact);
        }
        // One state per actor: its states in each store, joined.
        if (!said.empty()) {
          std::string joined = said.front();
          for (size_t i = 1; i < said.size(); ++i) {
            joined += "; " + said[i].substr(title.size() + 1);
          }
          facts.push_back(joined);
        }
      }
      step["facts"] = facts;
      Json counts = Json::object();
      for (const auto& [m, n] : deliveries) counts[m] = n;
      step["deliveries"] = counts;
      std::string note;
      Json diff = Json::object();
      if (auto it = by_seq.find(shown_seq[event_index]); it != by_seq.end() && e.seq != 0) {
        const TablesSnapshot* now = own[it->second - first_snapshot];
        const TablesSnapshot* before =
            last_snapshot >= 0 ? own[static_cast<size_t>(last_snapshot) - first_snapshot] : nullptr;
        if (now->unreadable.empty() && (before == nullptr || before->unreadable.empty())) {
          diff = DiffJson(before, *now, ids);
        }
        last_snapshot = static_cast<int64_t>(it->second);
        if (!now->unreadable.empty()) {
          note = "the tables could not be read after this step: " + now->unreadable;
        } else if (!diff.empty() && !(unread_commits.empty() && unread_others.empty())) {
          // Whose they may be: the commits seen, else the other processes' steps.
          std::vector<std::string> whose = unread_commits;
          if (whose.empty()) {
            for (int pid : unread_others) whose.push_back("the steps of " + ids.Process(pid));
          }
          std::string named = whose.front();
          for (size_t i = 1; i < whose.size(); ++i) named += ", " + whose[i];
          note = fmt::format(
              "the tables were read after this step: the changes shown cover the steps run in "
              "another process since the last read too: {}",
              named);
        }
        unread_commits.clear();
        unread_others.clear();
      } else {
        // The probe reads after the steps of the process that runs the scenario; a child
        // process's steps (a delivery that dies, --instances processes) are reported later.
        const bool other = !section.snapshots.empty() && e.pid != section.snapshots.front().pid;
        if (other && e.kind == "sql" && e.error.empty() && IsCommit(e)) {
          unread_commits.push_back(fmt::format("{}'s COMMIT ({})", who, ids.Process(e.pid)));
        } else if (other && std::find(unread_others.begin(), unread_others.end(), e.pid) ==
                                unread_others.end()) {
          unread_others.push_back(e.pid);
        }
        const std::string earlier = last_snapshot >= 0
                                        ? "the tables shown were read after an earlier step"
                                        : "no tables are shown before the first read";
        // A death or a stop is what happened to that process, seen by its parent: not a
        // step it ran.
        const bool befell = e.kind == "died" || e.kind == "stopped";
        note = other ? fmt::format("this step {} another process ({}), after whose steps "
                                   "the tables are not read; {}",
                                   befell ? "happened to" : "ran in", ids.Process(e.pid), earlier)
                     : earlier;
      }
      step["snapshot"] = last_snapshot;
      step["diff"] = diff;
      step["note"] = note;
      steps.push_back(step);
    }
  }
  return {{"sections", section_list}, {"steps", steps}, {"snapshots", snapshots}};
}

}  // namespace

std::string StepThroughData(const std::vector<HtmlSection>& sections) {
  return PageData(sections).dump();
}

std::string StepThroughPage(const std::vector<HtmlSection>& sections) {
  std::string json = StepThroughData(sections);
  // Inside a <script> element: no "</" may appear.
  std::string safe;
  for (char c : json) {
    if (c == '<') {
      safe += "\\u003c";
    } else {
      safe += c;
    }
  }
  std::string page = kPage;
  page.replace(page.find("@DATA@"), 6, safe);
  return page;
}

}  // namespace dedupsim
