#include "files/grade.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "explore/deliveries.h"
#include "explore/report.h"
#include "views/trace_text.h"

namespace dedupsim::files {

namespace {

constexpr Verdict kVerdicts[] = {Verdict::kSafe,     Verdict::kOnce,  Verdict::kUnsafe,
                                 Verdict::kTwice,    Verdict::kLost,  Verdict::kReconcile,
                                 Verdict::kDeadlock, Verdict::kError, Verdict::kAny};

std::optional<explore::Outcome> OutcomeOf(Verdict v) {
  switch (v) {
    case Verdict::kTwice:
      return explore::Outcome::kTwice;
    case Verdict::kLost:
      return explore::Outcome::kLost;
    case Verdict::kReconcile:
      return explore::Outcome::kReconcile;
    case Verdict::kDeadlock:
      return explore::Outcome::kDeadlock;
    case Verdict::kError:
      return explore::Outcome::kError;
    default:
      return std::nullopt;
  }
}

// Terminal columns of UTF-8 text ("×" is one).
size_t Columns(const std::string& s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

}  // namespace

std::string_view ToString(Verdict v) {
  switch (v) {
    case Verdict::kSafe:
      return "safe";
    case Verdict::kOnce:
      return "once";
    case Verdict::kUnsafe:
      return "unsafe";
    case Verdict::kTwice:
      return "twice";
    case Verdict::kLost:
      return "lost";
    case Verdict::kReconcile:
      return "reconcile";
    case Verdict::kDeadlock:
      return "deadlock";
    case Verdict::kError:
      return "error";
    case Verdict::kAny:
      return "any";
  }
  return "?";
}

std::optional<Verdict> ParseVerdict(std::string_view name) {
  for (Verdict v : kVerdicts) {
    if (ToString(v) == name) return v;
  }
  return std::nullopt;
}

std::string VerdictNames() {
  std::string out;
  for (Verdict v : kVerdicts) out += (out.empty() ? "" : ", ") + std::string(ToString(v));
  return out;
}

bool Holds(Verdict v, const explore::CellResult& cell) {
  using explore::Outcome;
  switch (v) {
    case Verdict::kSafe:
      return cell.Safe();
    case Verdict::kOnce:
      return cell.Failing() == 0;
    case Verdict::kUnsafe:
      return !cell.Safe();
    case Verdict::kAny:
      return true;
    default:
      return cell.counts[explore::Index(*OutcomeOf(v))] > 0;
  }
}

Verdict DefaultVerdict(const explore::Fault& fault) {
  return fault.name == "producer-duplicate" ? Verdict::kAny : Verdict::kSafe;
}

bool Grade::Passed() const {
  for (const GradedCell& c : cells) {
    if (!c.passed) return false;
  }
  return true;
}

int64_t Grade::Schedules() const {
  int64_t n = 0;
  for (const GradedCell& c : cells) n += c.cell.schedules;
  return n;
}

Grade GradeStrategy(explore::Explorer& explorer, const explore::Strategy& strategy,
                    const std::vector<const explore::Fault*>& faults,
                    const std::vector<Expectation>& expectations, bool with_tables) {
  auto started = std::chrono::steady_clock::now();
  Grade grade;
  grade.strategy = &strategy;
  for (const explore::Fault* f : faults) {
    GradedCell g;
    g.cell = explorer.ExploreCell(strategy, *f);
    g.expected = DefaultVerdict(*f);
    for (const Expectation& e : expectations) {
      if (e.fault == f) g.expected = e.verdict;
    }
    g.passed = Holds(g.expected, g.cell);
    if (g.cell.shortest) {
      Recorder recorder;
      g.replay = explorer.ReplayShortest(g.cell, &recorder, with_tables ? &g.tables : nullptr);
      g.events = recorder.Events();
    }
    grade.cells.push_back(std::move(g));
  }
  grade.elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return grade;
}

std::string FormatGrade(const Grade& grade, bool with_trace) {
  const explore::Strategy& s = *grade.strategy;
  std::string out =
      fmt::format("{}{}({}): {}\n", grade.file, grade.file.empty() ? "" : " ", s.name,
                  grade.Passed() ? "passes" : "FAILS");
  out += fmt::format("  effect {}; steps of a clean delivery: {}\n", s.effect,
                     fmt::join(s.crash_points, ", "));
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"fault", "expected", "outcomes", "schedules", ""});
  for (const GradedCell& g : grade.cells) {
    rows.push_back({std::string(g.cell.fault->name), std::string(ToString(g.expected)),
                    explore::CellLabel(g.cell), std::to_string(g.cell.schedules),
                    g.expected == Verdict::kAny ? "not graded"
                    : g.passed                  ? "ok"
                                                : "FAIL"});
  }
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], Columns(row[i]));
  }
  for (const auto& row : rows) {
    std::string line = "  ";
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - Columns(row[i]) + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  for (const GradedCell& g : grade.cells) {
    if (!g.cell.shortest || !g.replay) continue;
    const explore::Counterexample& c = *g.cell.shortest;
    out += fmt::format("\n{} ({}): {} of {} schedules fail; the shortest: {}{} steps{}, ends {}:\n",
                       g.cell.fault->name,
                       g.expected == Verdict::kAny ? "not graded"
                       : g.passed                  ? "as expected"
                                                   : "fails the check",
                       g.cell.Failing(), g.cell.schedules, explore::DeliveriesCount(*g.replay),
                       c.picks.size(), c.variant.empty() ? "" : ", " + c.variant,
                       explore::ToString(g.replay->outcome));
    // The deliveries first (what a student reads as the story), the steps under them.
    if (!g.replay->deliveries.empty()) {
      out += "  " + explore::FormatDeliveries(g.replay->deliveries, "  ");
    }
    out += fmt::format("  {} steps:\n", g.replay->steps.size());
    for (size_t i = 0; i < g.replay->steps.size(); ++i) {
      out += fmt::format("  {:>3}  {}\n", i + 1, g.replay->steps[i]);
    }
    out += fmt::format("  final: {}\n", explore::FormatFigures(g.replay->figures));
    if (!g.replay->note.empty()) out += fmt::format("  note: {}\n", g.replay->note);
    if (with_trace) {
      out += "  trace:\n";
      for (const TraceEvent& e : g.events) out += "    " + explore::ExplorerTraceLine(e) + "\n";
    }
  }
  out += fmt::format("\n{}: {} of {} faults as expected, {} schedules\n", s.name,
                     std::count_if(grade.cells.begin(), grade.cells.end(),
                                   [](const GradedCell& g) { return g.passed; }),
                     grade.cells.size(), grade.Schedules());
  return out;
}

nlohmann::ordered_json GradeToJson(const Grade& grade) {
  nlohmann::ordered_json j;
  j["file"] = grade.file;
  j["name"] = grade.strategy->name;
  j["effect"] = grade.strategy->effect;
  j["steps"] = grade.strategy->crash_points;
  j["passed"] = grade.Passed();
  j["schedules"] = grade.Schedules();
  nlohmann::ordered_json cells = nlohmann::ordered_json::array();
  for (const GradedCell& g : grade.cells) {
    nlohmann::ordered_json c;
    c["fault"] = g.cell.fault->name;
    c["expected"] = ToString(g.expected);
    c["passed"] = g.passed;
    c["cell"] = explore::CellLabel(g.cell);
    c["schedules"] = g.cell.schedules;
    nlohmann::ordered_json counts;
    for (size_t i = 0; i < explore::kOutcomeCount; ++i) {
      counts[std::string(explore::ToString(explore::OutcomeAt(i)))] = g.cell.counts[i];
    }
    c["counts"] = counts;
    if (g.cell.shortest && g.replay) {
      c["counterexample"] = {{"variant", g.cell.shortest->variant},
                             {"outcome", explore::ToString(g.replay->outcome)},
                             {"length", g.replay->picks.size()},
                             {"steps", g.replay->steps},
                             {"deliveries", explore::DeliveriesToJson(g.replay->deliveries)},
                             {"figures", explore::FiguresToJson(g.replay->figures)},
                             {"note", g.replay->note}};
    } else {
      c["counterexample"] = nullptr;
    }
    cells.push_back(c);
  }
  j["cells"] = cells;
  return j;
}

}  // namespace dedupsim::files
