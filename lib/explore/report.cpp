#include "explore/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "explore/deliveries.h"
#include "explore/strategies.h"
#include "views/trace_text.h"

namespace dedupsim::explore {

namespace {

constexpr const char* kTimes = "\u00d7";  // ×

// Display columns of a UTF-8 string: every byte that does not continue a character.
size_t Columns(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

std::string Pad(const std::string& s, size_t width) {
  size_t columns = Columns(s);
  return columns >= width ? s : s + std::string(width - columns, ' ');
}

std::string Label(const OutcomeCounts& counts) {
  std::string out;
  // Worst first: the reader sees what matters most.
  for (Outcome o : {Outcome::kDeadlock, Outcome::kError, Outcome::kTwice, Outcome::kWrong,
                    Outcome::kLost, Outcome::kReconcile}) {
    int64_t n = counts[Index(o)];
    if (n == 0) continue;
    if (!out.empty()) out += ' ';
    out += fmt::format("{} {}{}", ToString(o), kTimes, n);
  }
  return out.empty() ? "once" : out;
}

nlohmann::ordered_json CountsToJson(const OutcomeCounts& counts) {
  nlohmann::ordered_json j;
  for (size_t i = 0; i < kOutcomeCount; ++i) j[std::string(ToString(OutcomeAt(i)))] = counts[i];
  return j;
}

int64_t Rounded(double x) { return static_cast<int64_t>(std::llround(x)); }

// " --fault a --fault b" when the mix is not every fault, else "".
std::string MixFlags(const RandomMix& mix) {
  if (mix.All()) return "";
  std::string flags;
  for (const std::string& name : mix.Names()) flags += " --fault " + name;
  return flags;
}

std::string Trace(const std::vector<TraceEvent>& events) {
  std::string out;
  for (const TraceEvent& e : events) out += "  " + ExplorerTraceLine(e) + "\n";
  return out;
}

}  // namespace

std::string ExplorerTraceLine(const TraceEvent& event) {
  TraceEvent e = event;
  // Each attempt's "deliver" line names its message and attempt already; the broker's own
  // steps ("no ack for ... (delivery N)") keep the broker's number.
  if (e.kind != "broker") e.delivery = 0;
  return FormatTraceLine(e);
}

std::string CellLabel(const CellResult& cell) { return Label(cell.counts); }

namespace {

const char* BackendName(const MatrixResult& m) {
  return m.postgres_isolation.empty() ? "sqlite" : "postgres";
}

// The other backend's cell at the same place, when it differs in its label or its count.
const CellResult* DifferingCell(const MatrixResult& m, size_t r, size_t c) {
  if (m.compared == nullptr) return nullptr;
  const MatrixResult& o = *m.compared;
  if (r >= o.strategies.size() || c >= o.faults.size() || o.strategies[r] != m.strategies[r] ||
      o.faults[c] != m.faults[c]) {
    return nullptr;
  }
  const CellResult& mine = m.Cell(r, c);
  const CellResult& theirs = o.Cell(r, c);
  if (CellLabel(mine) == CellLabel(theirs) && mine.schedules == theirs.schedules) return nullptr;
  return &theirs;
}

}  // namespace

std::string FormatMatrix(const MatrixResult& m) {
  std::vector<std::vector<std::string>> table;
  std::vector<std::string> notes;  // the other backend's differing cells
  std::vector<std::string> header{"strategy"};
  for (const Fault* f : m.faults) header.emplace_back(f->name);
  table.push_back(header);
  for (size_t r = 0; r < m.strategies.size(); ++r) {
    std::vector<std::string> row{std::string(m.strategies[r]->name)};
    for (size_t c = 0; c < m.faults.size(); ++c) {
      const CellResult& cell = m.Cell(r, c);
      const CellResult* other = DifferingCell(m, r, c);
      row.push_back(fmt::format("{} ({}){}", CellLabel(cell), cell.schedules, other ? " *" : ""));
      if (other != nullptr) {
        notes.push_back(fmt::format("* {} under {}: {} {} ({}), {} {} ({})", m.strategies[r]->name,
                                    m.faults[c]->name, BackendName(m), CellLabel(cell),
                                    cell.schedules, BackendName(*m.compared), CellLabel(*other),
                                    other->schedules));
      }
    }
    table.push_back(row);
  }
  std::vector<size_t> widths(header.size(), 0);
  for (const auto& row : table) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], Columns(row[i]));
  }
  std::string out =
      m.postgres_isolation.empty()
          ? fmt::format(
                "dedupsim explore: {} strategies {} {} faults, every schedule on a real SQLite "
                "file (journal {}, seed {})\n",
                m.strategies.size(), kTimes, m.faults.size(), ToString(m.journal), m.seed)
          : fmt::format(
                "dedupsim explore: {} strategies {} {} faults, every schedule on a real "
                "PostgreSQL server (isolation {}, seed {})\n",
                m.strategies.size(), kTimes, m.faults.size(), m.postgres_isolation, m.seed);
  out += fmt::format("cell: the outcome, {}N the schedules that did not end once, (M) the schedules explored\n",
                     kTimes);
  if (m.reduced) out += "schedules that differ only in the order of independent steps are run once\n";
  if (m.world != WorldSize{}) {
    out += fmt::format("concurrent: {} copies in {} instances\n", m.world.deliveries, m.world.instances);
  }
  out += "\n";
  for (const auto& row : table) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += i + 1 < row.size() ? Pad(row[i], widths[i] + 2) : row[i];
    }
    out += line + "\n";
  }
  out += fmt::format("\n{} schedules, {} steps", m.schedules, m.steps);
  if (m.reduced) out += fmt::format(", {} runs cut short by the reduction", m.pruned);
  out += "\n";
  if (m.compared != nullptr) {
    out += notes.empty() ? fmt::format("\nevery cell is the same on {}\n", BackendName(*m.compared))
                         : fmt::format("\n* differs on {} (same seed, same schedules' rules):\n",
                                       BackendName(*m.compared));
    for (const std::string& note : notes) out += note + "\n";
  }
  return out;
}

std::string FormatTiming(const MatrixResult& m) {
  return fmt::format("explored in {} ms: {} schedules/s, {} steps/s\n", Rounded(m.elapsed_ms),
                     Rounded(m.SchedulesPerSecond()),
                     Rounded(m.elapsed_ms > 0 ? static_cast<double>(m.steps) * 1000.0 / m.elapsed_ms : 0.0));
}

nlohmann::ordered_json FiguresToJson(const Figures& f) {
  return {{"reserved", f.reserved},       {"reservedExpected", f.reserved_expected},
          {"inboxRows", f.inbox_rows},    {"emailsSent", f.emails_sent},
          {"flagged", f.flagged},         {"crashes", f.crashes},
          {"deliveries", f.deliveries}};
}

std::string FormatFigures(const Figures& f) { return FormatFigures(f, true); }

std::string FormatFigures(const Figures& f, bool with_reserved) {
  return fmt::format(
      "{}inbox rows {}, emails sent {}, flagged for reconciliation {}, crashes {}, delivery "
      "attempts {}",
      with_reserved
          ? fmt::format("reserved {} (once per order: {}), ", f.reserved, f.reserved_expected)
          : "",
      f.inbox_rows, f.emails_sent, f.flagged, f.crashes, f.deliveries);
}

nlohmann::ordered_json MatrixToJson(const MatrixResult& m) {
  nlohmann::ordered_json j;
  j["command"] = "explore";
  j["seed"] = m.seed;
  if (m.postgres_isolation.empty()) {
    j["journal"] = ToString(m.journal);
  } else {
    j["backend"] = "postgres";
    j["isolation"] = m.postgres_isolation;
  }
  j["reduced"] = m.reduced;
  j["instances"] = m.world.instances;
  j["deliveries"] = m.world.deliveries;
  nlohmann::ordered_json strategies = nlohmann::ordered_json::array();
  for (const Strategy* s : m.strategies) {
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    for (std::string_view p : s->crash_points) points.push_back(p);
    strategies.push_back({{"name", s->name},
                          {"summary", s->summary},
                          {"effect", s->effect},
                          {"partner", s->partner},
                          {"crashPoints", points}});
  }
  j["strategies"] = strategies;
  nlohmann::ordered_json faults = nlohmann::ordered_json::array();
  for (const Fault* f : m.faults) faults.push_back({{"name", f->name}, {"summary", f->summary}});
  j["faults"] = faults;
  nlohmann::ordered_json cells = nlohmann::ordered_json::array();
  for (const CellResult& cell : m.cells) {
    nlohmann::ordered_json c;
    c["strategy"] = cell.strategy->name;
    c["fault"] = cell.fault->name;
    c["cell"] = CellLabel(cell);
    c["safe"] = cell.Safe();
    c["schedules"] = cell.schedules;
    c["failing"] = cell.Failing();
    c["counts"] = CountsToJson(cell.counts);
    nlohmann::ordered_json variants = nlohmann::ordered_json::array();
    for (const VariantResult& v : cell.variants) {
      variants.push_back({{"variant", v.variant},
                          {"cell", Label(v.counts)},
                          {"schedules", v.schedules},
                          {"longest", v.longest},
                          {"counts", CountsToJson(v.counts)}});
    }
    c["variants"] = variants;
    if (cell.shortest) {
      c["shortest"] = {{"variant", cell.shortest->variant},
                       {"outcome", ToString(cell.shortest->outcome)},
                       {"length", cell.shortest->picks.size()},
                       {"steps", cell.shortest->steps},
                       {"figures", FiguresToJson(cell.shortest->figures)}};
    } else {
      c["shortest"] = nullptr;
    }
    if (m.compared != nullptr) {
      size_t index = static_cast<size_t>(&cell - m.cells.data());
      size_t r = index / m.faults.size();
      size_t col = index % m.faults.size();
      const CellResult* other = DifferingCell(m, r, col);
      const CellResult& theirs = other ? *other : m.compared->Cell(r, col);
      c["differs"] = other != nullptr;
      c[BackendName(*m.compared)] = {{"cell", CellLabel(theirs)},
                                     {"safe", theirs.Safe()},
                                     {"schedules", theirs.schedules},
                                     {"counts", CountsToJson(theirs.counts)}};
    }
    cells.push_back(c);
  }
  j["cells"] = cells;
  j["totalSchedules"] = m.schedules;
  j["totalSteps"] = m.steps;
  j["totalPruned"] = m.pruned;
  j["elapsedMs"] = Rounded(m.elapsed_ms);
  j["schedulesPerSecond"] = Rounded(m.SchedulesPerSecond());
  return j;
}

std::string DeliveriesCount(const ScheduleResult& replay) {
  if (replay.deliveries.empty()) return "";
  return fmt::format("{} deliver{}, ", replay.deliveries.size(),
                     replay.deliveries.size() == 1 ? "y" : "ies");
}

std::string CounterexampleHeadline(const CellResult& cell, const ScheduleResult& replay) {
  const Counterexample& c = *cell.shortest;
  // Flagged for reconciliation is the consumer saying it cannot know, not a failure.
  const char* heading = BreaksInvariant(replay.outcome)
                            ? "shortest failing schedule"
                            : "shortest schedule flagged for reconciliation (not a failure)";
  return fmt::format("{}: {}{} steps{}, outcome {}", heading, DeliveriesCount(replay),
                     c.picks.size(), c.variant.empty() ? "" : ", " + c.variant,
                     ToString(replay.outcome));
}

std::string FormatCounterexample(const CellResult& cell, const ScheduleResult& replay,
                                 const std::vector<TraceEvent>& events, uint64_t seed,
                                 std::string_view backend_args) {
  std::string out = fmt::format("{} under {}: {} of {} schedules\n", cell.strategy->name,
                                cell.fault->name, CellLabel(cell), cell.schedules);
  out += CounterexampleHeadline(cell, replay) + "\n";
  if (!replay.deliveries.empty()) out += FormatDeliveries(replay.deliveries, "");
  if (!replay.deliveries.empty()) out += "trace:\n";
  out += Trace(events);
  out += fmt::format("final: {}\n", FormatFigures(replay.figures));
  if (!replay.note.empty()) out += fmt::format("note: {}\n", replay.note);
  out +=
      fmt::format("again: dedupsim explore --strategy {} --fault {} --counterexample --seed {}{}\n",
                  cell.strategy->name, cell.fault->name, seed, backend_args);
  return out;
}

nlohmann::ordered_json CounterexampleToJson(const CellResult& cell, const ScheduleResult& replay) {
  nlohmann::ordered_json j;
  j["strategy"] = cell.strategy->name;
  j["fault"] = cell.fault->name;
  j["cell"] = CellLabel(cell);
  j["schedules"] = cell.schedules;
  j["failing"] = cell.Failing();
  j["variant"] = cell.shortest->variant;
  j["outcome"] = ToString(replay.outcome);
  j["length"] = replay.picks.size();
  j["steps"] = replay.steps;
  j["deliveries"] = DeliveriesToJson(replay.deliveries);
  j["figures"] = FiguresToJson(replay.figures);
  return j;
}

namespace {
// "producer duplicates" for producer-duplicate, and so on: a fault as a cause.
std::string FaultPhrase(const std::string& name) {
  if (name == "duplicate") return "duplicate deliveries";
  if (name == "crash") return "crashes";
  if (name == "concurrent") return "concurrent instances";
  if (name == "producer-duplicate") return "producer duplicates";
  if (name == "second-subscriber") return "the second subscriber";
  if (name == "lost-ack") return "lost acks";
  return name;
}
}  // namespace

std::string FormatRandom(const RandomResult& r) {
  std::string out = fmt::format(
      "dedupsim explore: seed {}, {} random runs per strategy, journal {}\n"
      "each run: 1 to 3 orders, random interleavings; mixing in {}\n\n",
      r.seed, r.runs, ToString(r.journal), fmt::join(r.mix.Names(), ", "));
  std::vector<std::vector<std::string>> table;
  // The columns: every outcome, `wrong` only when some run ended so (the post's consumers
  // never reserve another amount).
  std::vector<Outcome> columns{Outcome::kOnce,      Outcome::kTwice,    Outcome::kLost,
                               Outcome::kReconcile, Outcome::kDeadlock, Outcome::kError};
  for (const RandomRow& row : r.rows) {
    if (row.counts[Index(Outcome::kWrong)] > 0) {
      columns.push_back(Outcome::kWrong);
      break;
    }
  }
  std::vector<std::string> header{"strategy"};
  for (Outcome o : columns) header.emplace_back(ToString(o));
  header.emplace_back("first failing runs");
  table.push_back(header);
  for (const RandomRow& row : r.rows) {
    std::vector<std::string> line{std::string(row.strategy->name)};
    for (Outcome o : columns) line.push_back(std::to_string(row.counts[Index(o)]));
    std::vector<std::string> first;
    for (size_t i = 0; i < row.failing.size() && i < 5; ++i) first.push_back(std::to_string(row.failing[i]));
    line.push_back(first.empty() ? "-" : fmt::format("{}", fmt::join(first, " ")));
    table.push_back(line);
  }
  std::vector<size_t> widths(table[0].size(), 0);
  for (const auto& row : table) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], Columns(row[i]));
  }
  for (const auto& row : table) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) line += i + 1 < row.size() ? Pad(row[i], widths[i] + 2) : row[i];
    out += line + "\n";
  }
  // Which fault the failures came from, as measured: a fault every failing run held, while
  // the runs without it (there were some) all ended once.
  std::string from;
  for (const RandomRow& row : r.rows) {
    if (row.failing.empty()) continue;
    const std::vector<std::string> came_from = row.FailuresCameFrom();
    if (came_from.empty()) {
      from += fmt::format("  {}: no one fault: runs failed without each of them\n", row.strategy->name);
      continue;
    }
    std::vector<std::string> parts;
    for (const std::string& name : came_from) {
      const FaultTally& t = row.by_fault.at(name);
      parts.push_back(fmt::format("{} (all {} failing runs held it; none of the {} runs without it failed)",
                                  FaultPhrase(name), row.failing.size(), t.runs_without));
    }
    from += fmt::format("  {}: all from {}\n", row.strategy->name, fmt::join(parts, "; and all from "));
  }
  if (!from.empty()) out += "\nwhere the failures came from:\n" + from;
  out += fmt::format("\nreplay one: dedupsim explore --seed {} --replay RUN --strategy NAME{}\n", r.seed,
                     MixFlags(r.mix));
  return out;
}

std::string FormatRandomTiming(const RandomResult& r) {
  return fmt::format("ran in {} ms: {} runs/s\n", Rounded(r.elapsed_ms), Rounded(r.RunsPerSecond()));
}

namespace {
nlohmann::ordered_json ByFaultJson(const RandomRow& row) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [name, t] : row.by_fault) {
    j[name] = {{"runsWith", t.runs_with},
               {"failingWith", t.failing_with},
               {"runsWithout", t.runs_without},
               {"failingWithout", t.failing_without}};
  }
  return j;
}
}  // namespace

nlohmann::ordered_json RandomToJson(const RandomResult& r) {
  nlohmann::ordered_json j;
  j["command"] = "explore";
  j["seed"] = r.seed;
  j["runs"] = r.runs;
  j["journal"] = ToString(r.journal);
  j["faults"] = r.mix.Names();
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const RandomRow& row : r.rows) {
    rows.push_back({{"strategy", row.strategy->name},
                    {"runs", row.runs},
                    {"steps", row.steps},
                    {"counts", CountsToJson(row.counts)},
                    {"failingRuns", row.failing},
                    {"failuresCameFrom", row.FailuresCameFrom()},
                    {"byFault", ByFaultJson(row)}});
  }
  j["rows"] = rows;
  j["totalRuns"] = r.TotalRuns();
  j["elapsedMs"] = Rounded(r.elapsed_ms);
  j["runsPerSecond"] = Rounded(r.RunsPerSecond());
  return j;
}

std::string FormatRandomReplay(const Strategy& strategy, uint64_t seed, int64_t run,
                               const RandomMix& mix, const ScheduleResult& replay,
                               const std::vector<TraceEvent>& events) {
  Plan plan = RandomPlan(strategy, seed, run, mix);
  std::string out = fmt::format("{}, seed {}, run {}: {} in {} steps\n", strategy.name, seed, run,
                                ToString(replay.outcome), replay.picks.size());
  out += fmt::format("plan: {}\n", DescribePlan(plan));
  out += Trace(events);
  out += fmt::format("final: {}\n", FormatFigures(replay.figures));
  if (!replay.note.empty()) out += fmt::format("note: {}\n", replay.note);
  out += fmt::format("again: dedupsim explore --seed {} --replay {} --strategy {}{}\n", seed, run,
                     strategy.name, MixFlags(mix));
  return out;
}

nlohmann::ordered_json RandomReplayToJson(const Strategy& strategy, uint64_t seed, int64_t run,
                                          const ScheduleResult& replay) {
  return {{"strategy", strategy.name},         {"seed", seed},
          {"run", run},                        {"outcome", ToString(replay.outcome)},
          {"length", replay.picks.size()},     {"steps", replay.steps},
          {"figures", FiguresToJson(replay.figures)}};
}

}  // namespace dedupsim::explore
