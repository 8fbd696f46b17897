#include "views/html_steps.h"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "views/lanes.h"
#include "views/step_text.h"

namespace dedupsim {

namespace {

using Json = nlohmann::ordered_json;

Json TablesJson(const TablesSnapshot& snap, ShortIds& ids) {
  Json tables = Json::array();
  for (const TableState& t : snap.tables) {
    Json rows = Json::array();
    for (const auto& row : t.rows) {
      Json cells = Json::array();
      for (const std::string& cell : row) cells.push_back(ids.Shorten(cell));
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

// What a step was, in a line a class can read.
std::string StepText(const TraceEvent& e, const std::string& who, ShortIds& ids, bool* bad) {
  *bad = false;
  if (e.kind == "sql") {
    std::string where = e.target.empty() || e.target == "database" ? "" : " (" + e.target + ")";
    std::string result = DescribeResult(e, true);
    *bad = !(e.result.empty() || e.result.rfind("ok", 0) == 0 || e.result == "row");
    return fmt::format("{}: {}{} → {}", who, StepLabel(e), where, result);
  }
  if (e.kind == "open") {
    return e.delivery > 0
               ? fmt::format("{} receives {}, delivery {}", who, ids.Name(e.key), e.delivery)
               : fmt::format("{} opens a connection", who);
  }
  if (e.kind == "broker")
    return (LaneKey(e) == "producer"   ? "Producer: "
            : LaneKey(e) == "operator" ? "Operator: "
                                       : "Broker: ") +
           BrokerStepText(e, ids, bad);
  if (e.kind == "outcome") {
    *bad = e.detail == "NeedsReconciliation" || e.detail == "ContentMismatch";
    return fmt::format("{}: outcome {}", who, e.detail);
  }
  if (e.kind == "part") return "sub-run: " + e.detail;
  if (e.kind == "clock") return "simulated time: " + e.detail;
  if (e.kind == "wait") return fmt::format("{} waits: {}", who, e.detail);
  if (e.kind == "hook") return fmt::format("{}: hook {}", who, e.detail);
  if (e.kind == "crash") {
    *bad = true;
    return fmt::format("{}: crash at {}", who, e.detail);
  }
  if (e.kind == "died") {
    *bad = true;
    return fmt::format("{} died at {}: {}", who, e.detail, e.result);
  }
  if (e.kind == "recover") return "Database, on the next open: " + ids.Shorten(e.detail);
  if (e.kind == "lock") return fmt::format("{}: {} ({})", who, e.detail, e.result);
  if (e.kind == "send") return fmt::format("{}: {} → {}", who, e.detail, e.result);
  return ids.Shorten(fmt::format("{}: {} {} {}", who, e.kind, e.detail, e.result));
}

constexpr const char* kPage = R"html(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>dedupsim: step through</title>
<style>
* { box-sizing: border-box; }
body { margin: 0; font-family: 'DejaVu Sans', Verdana, Arial, sans-serif; font-size: 17px; color: #1b1b1b; background: #fafafa; height: 100vh; display: flex; flex-direction: column; }
header { padding: 8px 16px; background: #263238; color: #fff; display: flex; gap: 16px; align-items: center; }
header h1 { font-size: 19px; margin: 0; white-space: nowrap; }
header input { flex: 1; }
#counter { font-family: 'DejaVu Sans Mono', monospace; white-space: nowrap; }
main { flex: 1; display: flex; min-height: 0; }
#steps { width: 40%; overflow-y: auto; margin: 0; padding: 6px 0; list-style: none; border-right: 2px solid #cfd8dc; background: #fff; }
#steps li a { display: block; padding: 3px 12px; color: #263238; text-decoration: none; font-size: 15px; font-family: 'DejaVu Sans Mono', monospace; }
#steps li.section a { background: #eceff1; font-weight: bold; font-family: 'DejaVu Sans', sans-serif; }
#steps li.current a { background: #ffe082; font-weight: bold; }
#steps li.bad a { color: #b71c1c; }
#steps li.probe a { color: #78909c; font-style: italic; }
#panel { width: 60%; overflow-y: auto; padding: 10px 18px; }
#title { font-size: 21px; font-weight: bold; margin: 4px 0 6px; }
#title.bad { color: #b71c1c; }
.facts { display: flex; gap: 18px; flex-wrap: wrap; margin: 6px 0; font-size: 16px; }
.facts div { background: #eceff1; padding: 4px 10px; border-radius: 4px; }
.note { color: #6d4c41; font-style: italic; font-size: 15px; }
table { border-collapse: collapse; margin: 4px 0 12px; font-family: 'DejaVu Sans Mono', monospace; font-size: 15px; }
caption { text-align: left; font-weight: bold; font-family: 'DejaVu Sans', sans-serif; padding: 2px 0; }
th, td { border: 1px solid #b0bec5; padding: 2px 8px; max-width: 260px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
th { background: #eceff1; }
td.changed { background: #ffd54f; font-weight: bold; outline: 2px solid #ff6f00; }
tr.added td { background: #c8e6c9; }
.line { font-family: 'DejaVu Sans Mono', monospace; font-size: 14px; color: #37474f; margin: 2px 0 8px; white-space: pre-wrap; }
.keys { font-size: 13px; color: #cfd8dc; white-space: nowrap; }
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
    if (s.kind === 'part' || s.first) li.className = 'section';
    if (s.bad) li.className += ' bad';
    if (s.probe) li.className += ' probe';
    const a = document.createElement('a');
    a.href = '#step-' + (i + 1);
    a.textContent = (i + 1) + '. ' + s.text;
    a.addEventListener('click', function (ev) { ev.preventDefault(); show(i); });
    li.appendChild(a);
    list.appendChild(li);
  });
  function text(tag, t, cls) { const e = document.createElement(tag); e.textContent = t; if (cls) e.className = cls; return e; }
  function tablesOf(i) { const s = steps[i]; return s.snapshot >= 0 ? data.snapshots[s.snapshot] : null; }
  function find(tables, t) { if (!tables) return null; for (const u of tables) if (u.store === t.store && u.name === t.name) return u; return null; }
  function show(i) {
    current = Math.max(0, Math.min(steps.length - 1, i));
    const s = steps[current];
    slider.value = String(current);
    document.getElementById('counter').textContent = 'step ' + (current + 1) + ' of ' + steps.length;
    document.getElementById('scenario').textContent = s.scenario + ': ' + s.line;
    const title = document.getElementById('title');
    title.textContent = (current + 1) + '. ' + s.text;
    title.className = s.bad ? 'bad' : '';
    const facts = document.getElementById('facts');
    facts.innerHTML = '';
    const locks = s.locks.length ? s.locks : ['nobody holds the write lock'];
    locks.forEach(function (l) { facts.appendChild(text('div', l, 'lock')); });
    s.waiting.forEach(function (w) { facts.appendChild(text('div', w, 'waiting')); });
    Object.keys(s.deliveries).forEach(function (k) { facts.appendChild(text('div', k + ': delivery ' + s.deliveries[k], 'delivery')); });
    document.getElementById('note').textContent = s.note || '';
    const box = document.getElementById('tables');
    box.innerHTML = '';
    const now = tablesOf(current);
    let before = null;
    for (let j = current - 1; j >= 0; j--) { if (steps[j].scenario !== s.scenario) break; const t = tablesOf(j); if (t && steps[j].snapshot !== s.snapshot) { before = t; break; } if (t && steps[j].snapshot === s.snapshot) continue; }
    if (now) {
      now.tables.forEach(function (t) {
        if (!data.shown[t.store + '/' + t.name]) return;
        const prev = find(before ? before.tables : null, t);
        const table = document.createElement('table');
        table.dataset.table = t.name;
        table.appendChild(text('caption', (t.store === 'database' ? '' : t.store + ': ') + t.name + ' (' + t.total + (t.total === 1 ? ' row)' : ' rows)')));
        const head = document.createElement('tr');
        t.columns.forEach(function (c) { head.appendChild(text('th', c)); });
        table.appendChild(head);
        t.rows.forEach(function (r, ri) {
          const tr = document.createElement('tr');
          const old = prev && prev.rows[ri];
          if (prev && !old) tr.className = 'added';
          r.forEach(function (v, ci) {
            const td = text('td', v);
            td.dataset.col = t.columns[ci];
            td.title = v;
            if (old && old[ci] !== v) td.className = 'changed';
            tr.appendChild(td);
          });
          table.appendChild(tr);
        });
        box.appendChild(table);
      });
    }
    const items = list.children;
    for (let j = 0; j < items.length; j++) items[j].classList.toggle('current', j === current);
    items[current].scrollIntoView({block: 'nearest'});
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

}  // namespace

std::string StepThroughPage(const std::vector<HtmlSection>& sections) {
  Json steps = Json::array();
  Json snapshots = Json::array();
  Json shown = Json::object();  // tables that hold a row at some step: the others are left out
  for (const HtmlSection& section : sections) {
    const std::vector<TraceEvent> events = CausalOrder(section.events);
    ShortIds ids(events);
    std::map<std::string, std::string> titles;
    for (const Lane& lane : BuildLanes(events, ids)) titles[lane.key] = lane.title;
    // Snapshots by the event they followed.
    std::map<std::tuple<int64_t, int, std::string, std::string, std::string>, int> by_event;
    for (const TablesSnapshot& snap : section.snapshots) {
      by_event[{snap.at_us, snap.pid, snap.kind, snap.instance, snap.detail}] =
          static_cast<int>(snapshots.size());
      Json j = {{"tables", TablesJson(snap, ids)}, {"unreadable", snap.unreadable}};
      for (const TableState& t : snap.tables) {
        if (t.total_rows > 0) shown[t.store + "/" + t.name] = true;
      }
      snapshots.push_back(j);
    }
    struct LockState {
      bool in_transaction = false;
      bool holds = false;
    };
    std::map<std::string, LockState> locks;    // lane key -> state
    std::map<std::string, std::string> waits;  // lane key -> what it waits on
    std::map<std::string, int> deliveries;     // short id -> delivery number
    int last_snapshot = -1;
    bool first = true;
    for (const TraceEvent& e : events) {
      const std::string key = LaneKey(e);
      const std::string who = titles.count(key) ? titles[key] : ActorTitle(e);
      if (e.kind == "wait") waits[key] = who + " waits for the write lock";
      if (e.kind == "sql") {
        waits.erase(key);
        LockState& l = locks[key + "|" + e.target];
        const bool ok = e.result.empty() || e.result == "ok" || e.result == "row";
        if (IsBegin(e) && ok) l.in_transaction = true;
        // A write inside a transaction takes the write lock until the transaction ends; an
        // autocommit write releases it as it returns.
        if (IsWrite(e) && ok && l.in_transaction) l.holds = true;
        if ((IsCommit(e) && ok) || IsRollback(e)) l = {};
      }
      if (e.kind == "lock") {
        // Recorded where the connection keeps its lock history (two instances at once):
        // when the write lock was really taken and released.
        LockState& l = locks[key + "|database"];
        if (e.detail == "write lock taken") l.holds = true;
        if (e.detail == "write lock released") l.holds = false;
      }
      if (e.kind == "died") {
        for (auto& [k, l] : locks) {
          if (k.rfind(key + "|", 0) == 0) l = {};
        }
        waits.erase(key);
      }
      if ((e.kind == "open" || (e.kind == "broker" && e.op == "deliver")) && e.delivery > 0) {
        deliveries[ids.Name(e.key)] = e.delivery;
      }
      bool bad = false;
      Json step;
      step["scenario"] = section.scenario;
      step["line"] = section.line;
      step["kind"] = e.kind;
      step["first"] = first;
      first = false;
      step["text"] = StepText(e, who, ids, &bad);
      step["bad"] = bad;
      step["probe"] = ActorOf(e) == kActorProbe;
      Json held = Json::array();
      for (const auto& [k, l] : locks) {
        if (!l.holds) continue;
        const std::string lane = k.substr(0, k.find('|'));
        const std::string target = k.substr(k.find('|') + 1);
        const std::string title = titles.count(lane) ? titles[lane] : lane;
        held.push_back(target.empty() || target == "database"
                           ? fmt::format("{} holds the write lock", title)
                           : fmt::format("{} holds the {}'s write lock", title, target));
      }
      step["locks"] = held;
      Json waiting = Json::array();
      for (const auto& [k, w] : waits) waiting.push_back(w);
      step["waiting"] = waiting;
      Json counts = Json::object();
      for (const auto& [m, n] : deliveries) counts[m] = n;
      step["deliveries"] = counts;
      auto it = by_event.find({e.at_us, e.pid, e.kind, e.instance, e.detail});
      std::string note;
      if (it != by_event.end()) {
        last_snapshot = it->second;
        const std::string unreadable = snapshots[static_cast<size_t>(it->second)]["unreadable"];
        if (!unreadable.empty())
          note = "the tables could not be read after this step: " + unreadable;
      } else {
        // The probe reads after the steps of the process that runs the scenario; a child
        // process's steps (a delivery that dies, --instances processes) are reported later.
        const bool other = !section.snapshots.empty() && e.pid != section.snapshots.front().pid;
        const std::string earlier = last_snapshot >= 0
                                      ? "the tables shown were read after an earlier step"
                                      : "no tables are shown before the first read";
        note = other ? fmt::format(
                           "this step ran in another process (pid {}), after whose steps "
                           "the tables are not read; {}",
                           e.pid, earlier)
                     : earlier;
      }
      step["snapshot"] = last_snapshot;
      step["note"] = note;
      steps.push_back(step);
    }
  }
  Json data = {{"steps", steps}, {"snapshots", snapshots}, {"shown", shown}};
  std::string json = data.dump();
  // Inside a <script> element: no "</" may appear.
  std::string safe;
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] == '<') {
      safe += "\\u003c";
    } else {
      safe += json[i];
    }
  }
  std::string page = kPage;
  page.replace(page.find("@DATA@"), 6, safe);
  return page;
}

}  // namespace dedupsim
