#include "files/grade.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <chrono>

#include "explore/deliveries.h"
#include "explore/report.h"
#include "views/trace_text.h"

namespace dedupsim::files {

namespace {

constexpr CellExpectation kVerdicts[] = {CellExpectation::kSafe,     CellExpectation::kOnce,  CellExpectation::kUnsafe,
                                 CellExpectation::kTwice,    CellExpectation::kLost,  CellExpectation::kReconcile,
                                 CellExpectation::kDeadlock, CellExpectation::kError, CellExpectation::kAny};

std::optional<explore::Outcome> OutcomeOf(CellExpectation v) {
  switch (v) {
    case CellExpectation::kTwice:
      return explore::Outcome::kTwice;
    case CellExpectation::kLost:
      return explore::Outcome::kLost;
    case CellExpectation::kReconcile:
      return explore::Outcome::kReconcile;
    case CellExpectation::kDeadlock:
      return explore::Outcome::kDeadlock;
    case CellExpectation::kError:
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

std::string_view ToString(CellExpectation v) {
  switch (v) {
    case CellExpectation::kSafe:
      return "safe";
    case CellExpectation::kOnce:
      return "once";
    case CellExpectation::kUnsafe:
      return "unsafe";
    case CellExpectation::kTwice:
      return "twice";
    case CellExpectation::kLost:
      return "lost";
    case CellExpectation::kReconcile:
      return "reconcile";
    case CellExpectation::kDeadlock:
      return "deadlock";
    case CellExpectation::kError:
      return "error";
    case CellExpectation::kAny:
      return "any";
  }
  return "?";
}

std::optional<CellExpectation> ParseCellExpectation(std::string_view name) {
  for (CellExpectation v : kVerdicts) {
    if (ToString(v) == name) return v;
  }
  return std::nullopt;
}

std::string CellExpectationNames() {
  std::string out;
  for (CellExpectation v : kVerdicts) out += (out.empty() ? "" : ", ") + std::string(ToString(v));
  return out;
}

bool Holds(CellExpectation v, const explore::CellResult& cell) {
  using explore::Outcome;
  switch (v) {
    case CellExpectation::kSafe:
      return cell.Safe();
    case CellExpectation::kOnce:
      return cell.Failing() == 0;
    case CellExpectation::kUnsafe:
      return !cell.Safe();
    case CellExpectation::kAny:
      return true;
    default:
      return cell.counts[explore::Index(*OutcomeOf(v))] > 0;
  }
}

CellExpectation DefaultCellExpectation(const explore::Fault& fault) {
  return fault.name == "producer-duplicate" ? CellExpectation::kAny : CellExpectation::kSafe;
}

bool Grade::Passed() const {
  for (const GradedCell& c : cells) {
    if (!c.passed) return false;
  }
  return true;
}

int FaultPoints(const explore::Fault& fault) {
  static constexpr std::pair<std::string_view, int> kPoints[] = {
      {"clean", 1}, {"duplicate", 2},         {"crash", 2},    {"concurrent", 2},
      {"orders", 1}, {"second-subscriber", 1}, {"lost-ack", 1}, {"producer-duplicate", 0}};
  for (const auto& [name, points] : kPoints) {
    if (fault.name == name) return points;
  }
  return 1;
}

std::string_view Grade::Word() const {
  if (!Passed()) return "FAILS";
  return Exhaustive() ? "passes" : "no failure found, not exhaustive";
}

std::pair<int, int> Grade::Score() const {
  int points = 0;
  int of = 0;
  for (const GradedCell& g : cells) {
    if (g.expected == CellExpectation::kAny) continue;
    const int worth = FaultPoints(*g.cell.fault);
    of += worth;
    if (g.passed) points += worth;
  }
  return {points, of};
}

bool Grade::Exhaustive() const {
  for (const GradedCell& c : cells) {
    if (!c.cell.exhaustive) return false;
  }
  return true;
}

int64_t Grade::Schedules() const {
  int64_t n = 0;
  for (const GradedCell& c : cells) n += c.cell.schedules;
  return n;
}

namespace {

// The order cells are searched in: the faults whose plans have one instance first (one
// schedule a plan), then the interleaving ones; a quick cell's unused time goes to the
// cells after it.
int SearchRank(const explore::Fault& f) {
  if (f.name == "crash") return 1;
  if (f.name == "lost-ack") return 2;
  if (f.name == "concurrent" || f.name == "second-subscriber") return 3;
  return 0;
}

}  // namespace

namespace {

// The plan's books with Reserved as the replay left them, read from the explorer's file.
std::vector<BookFigure> ReadBookFigures(explore::Explorer& explorer, const explore::Plan& plan) {
  std::vector<BookFigure> books;
  if (explorer.options().postgres != nullptr || plan.books.empty()) return books;
  const TablesSnapshot snap = explorer.scheduler().OpenTablesReader(/*second_file=*/false)->Read(TraceEvent{});
  const TableState* stock = nullptr;
  for (const TableState& t : snap.tables) {
    if (t.name == "StockItems") stock = &t;
  }
  if (stock == nullptr) return books;
  auto column = [&](std::string_view name) {
    return static_cast<size_t>(std::find(stock->columns.begin(), stock->columns.end(), name) -
                               stock->columns.begin());
  };
  const size_t id = column("BookId");
  const size_t reserved = column("Reserved");
  if (id >= stock->columns.size() || reserved >= stock->columns.size()) return books;
  for (const explore::BookRow& b : plan.books) {
    BookFigure f{b.book_id, b.title, b.reserved, b.reserved, {}, {}};
    for (const auto& row : stock->rows) {
      if (row[id] != b.book_id) continue;
      const std::string& cell = row[reserved];
      int64_t value = 0;
      auto [end, error] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
      if (error != std::errc() || end != cell.data() + cell.size()) return {};  // not a count
      f.after = value;
    }
    for (const explore::LogicalOrder& o : plan.orders) {
      if (o.book_id == b.book_id) f.orders.push_back(o);
    }
    books.push_back(std::move(f));
  }
  return books;
}

// Each order's publish steps in the replay (its deliveries' "publish ..." steps); nothing
// when no delivery published.
void CountPublishes(std::vector<BookFigure>& books, const explore::Plan& plan,
                    const std::vector<explore::DeliveryAttempt>& deliveries) {
  std::map<std::string, std::string> order_of;  // MessageId -> OrderId
  for (const explore::InstanceScript& script : plan.instances) {
    for (const explore::Delivery& d : script.deliveries) {
      if (d.order < plan.orders.size()) order_of[d.message.message_id] = plan.orders[d.order].order_id;
    }
  }
  std::map<std::string, int64_t> published;
  int64_t any = 0;
  for (const explore::DeliveryAttempt& d : deliveries) {
    for (const std::string& step : d.did) {
      if (step.rfind("publish ", 0) != 0) continue;
      ++any;
      if (auto it = order_of.find(d.message); it != order_of.end()) published[it->second]++;
    }
  }
  if (any == 0) return;
  for (BookFigure& b : books) {
    b.published.clear();
    for (const explore::LogicalOrder& o : b.orders) b.published.push_back(published[o.order_id]);
  }
}

std::string Times(int64_t n) {
  if (n == 0) return "never";
  if (n == 1) return "once";
  if (n == 2) return "twice";
  return fmt::format("{} times", n);
}

}  // namespace

std::vector<std::string> FormatBookFigures(const std::vector<BookFigure>& books) {
  std::vector<std::string> out;
  for (const BookFigure& b : books) {
    const int64_t moved = b.after - b.before;
    if (b.orders.empty()) {
      out.push_back(moved == 0 ? fmt::format("{} (no order): untouched, {} reserved", b.title, b.after)
                               : fmt::format("{} (no order): {} reserved, was {}: moved though "
                                             "no message names it",
                                             b.title, b.after, b.before));
    } else if (b.orders.size() == 1) {
      const explore::LogicalOrder& o = b.orders[0];
      const bool whole = o.quantity > 0 && moved >= 0 && moved % o.quantity == 0;
      out.push_back(fmt::format("order {} ({}, qty {}): reserved {}{}{}", o.order_id.substr(0, 8),
                                b.title, o.quantity, moved,
                                whole ? " = " + Times(moved / o.quantity)
                                      : fmt::format(", not a whole number of {}", o.quantity),
                                b.published.empty() ? "" : ", published " + Times(b.published[0])));
    } else {
      std::vector<std::string> names;
      int64_t once = 0;
      for (const explore::LogicalOrder& o : b.orders) {
        names.push_back(fmt::format("{} (qty {})", o.order_id.substr(0, 8), o.quantity));
        once += o.quantity;
      }
      int64_t published = 0;
      for (int64_t n : b.published) published += n;
      out.push_back(fmt::format("orders {} ({}): reserved {} together, once each is {}{}{}",
                                fmt::join(names, ", "), b.title, moved, once,
                                moved == once ? "" : ": not each once",
                                b.published.empty()
                                    ? ""
                                    : fmt::format("; published {} together", published)));
    }
  }
  return out;
}

Grade GradeStrategy(explore::Explorer& explorer, const explore::Strategy& strategy,
                    const std::vector<const explore::Fault*>& faults,
                    const std::vector<Expectation>& expectations, bool with_tables,
                    const GradeBudget& budget) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point started = Clock::now();
  Grade grade;
  grade.strategy = &strategy;
  grade.cells.resize(faults.size());
  std::vector<size_t> order(faults.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return SearchRank(*faults[a]) < SearchRank(*faults[b]);
  });
  const auto total = std::chrono::duration_cast<Clock::duration>(budget.seconds);
  // The cells' time ends a twentieth before the budget does: the replays and the report.
  const Clock::time_point ends = budget.since.value_or(started) + total - total / 20;
  // Searches cell i with an equal share of the time left among `sharing` cells.
  auto search = [&](size_t i, size_t sharing) {
    const explore::Fault* f = faults[i];
    GradedCell& g = grade.cells[i];
    std::optional<explore::CellBudget> cell_budget;
    if (total.count() > 0) {
      // Never less than a fiftieth of the budget; the ordered search may use three fifths
      // of its share, the random walks the rest.
      const Clock::time_point now = Clock::now();
      Clock::duration share = (ends - now) / static_cast<int64_t>(sharing);
      share = std::max(share, total / 50);
      cell_budget = explore::CellBudget{now + share * 3 / 5, now + share, budget.seed};
      // A statement still running a twentieth of the budget past the cell's end is stopped.
      explorer.scheduler().StopAt(now + share + total / 20);
    }
    g = GradedCell{};
    g.cell = explorer.ExploreCell(strategy, *f, cell_budget ? &*cell_budget : nullptr);
    explorer.scheduler().StopAt(std::nullopt);
  };
  for (size_t k = 0; k < order.size(); ++k) search(order[k], order.size() - k);
  // Time left: the cells that ran out, again, with all of it.
  if (total.count() > 0 && Clock::now() < ends - total / 10) {
    std::vector<size_t> again;
    for (size_t i : order) {
      if (!grade.cells[i].cell.exhaustive && grade.cells[i].cell.Safe()) again.push_back(i);
    }
    for (size_t k = 0; k < again.size(); ++k) {
      explore::CellResult before = grade.cells[again[k]].cell;
      search(again[k], again.size() - k);
      // A second search that got less far than the first keeps the first.
      if (!grade.cells[again[k]].cell.exhaustive &&
          grade.cells[again[k]].cell.schedules < before.schedules) {
        grade.cells[again[k]].cell = std::move(before);
      }
    }
  }
  for (size_t i = 0; i < faults.size(); ++i) {
    GradedCell& g = grade.cells[i];
    g.expected = DefaultCellExpectation(*faults[i]);
    for (const Expectation& e : expectations) {
      if (e.fault == faults[i]) g.expected = e.verdict;
    }
    g.passed = Holds(g.expected, g.cell);
    // The schedule to show: the shortest that broke the invariant, else the shortest that
    // did not end once (a reconcile where one was called for). It ran in time once: no
    // deadline for its replay.
    if (const explore::Counterexample* shown = g.shown()) {
      Recorder recorder;
      g.replay = explorer.Replay(g.cell, *shown, &recorder, with_tables ? &g.tables : nullptr);
      g.events = recorder.Events();
      g.books = ReadBookFigures(explorer, shown->plan);
      CountPublishes(g.books, shown->plan, g.replay->deliveries);
    }
  }
  grade.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
  return grade;
}

namespace {

// An estimate of how many schedules there are: "35000", or "2.1e+30" past a billion.
std::string About(double n) {
  return n < 1e9 ? fmt::format("{:.0f}", n) : fmt::format("{:.1e}", n);
}

// "12", or "812 of about 35000" for a cell the budget cut short.
std::string SchedulesRun(const explore::CellResult& cell) {
  if (cell.exhaustive) return std::to_string(cell.schedules);
  return fmt::format("{} of about {}", cell.schedules, About(cell.estimated));
}

// The cell's status in the row.
std::string Status(const GradedCell& g) {
  if (g.expected == CellExpectation::kAny) return "not graded";
  if (!g.passed) return "FAIL";
  return g.cell.exhaustive ? "ok" : "ok so far, not exhaustive";
}

// A verdict the user asked for that names broken behaviour (--expect crash=twice): its
// schedule is the point of the exercise, told in full.
bool AskedForBreakage(CellExpectation v) {
  return v != CellExpectation::kSafe && v != CellExpectation::kOnce && v != CellExpectation::kAny;
}

}  // namespace

std::string StaleRefusalNote(const Grade& grade) {
  std::vector<std::string> where;
  for (const GradedCell& g : grade.cells) {
    if (!g.passed || g.cell.stale_refused == 0) continue;
    where.push_back(fmt::format("{} ({} of {} schedules; the first: {})", g.cell.fault->name,
                                g.cell.stale_refused, g.cell.schedules,
                                g.cell.stale_variant.empty() ? "its plan" : g.cell.stale_variant));
  }
  if (where.empty()) return "";
  return fmt::format(
      "\nnote: safe on SQLite, perhaps only there. Under {}, SQLite refused a delivery's write "
      "because its transaction had read before another instance wrote (SQLITE_BUSY), and the "
      "broker redelivered it. PostgreSQL makes no such refusal: under READ COMMITTED the write "
      "waits for the other's commit, then runs on what was read before. Unless a key the "
      "database enforces (PRIMARY KEY or UNIQUE) stops the second record, this file may process "
      "a message twice there: `dedupsim check --backend postgres` grades it there.\n",
      fmt::join(where, ", "));
}

std::string FormatGrade(const Grade& grade, bool with_trace) {
  const explore::Strategy& s = *grade.strategy;
  const auto [points, of] = grade.Score();
  std::string out = fmt::format("{}{}({}): {}, score {} of {}\n", grade.file,
                                grade.file.empty() ? "" : " ", s.name, grade.Word(), points, of);
  out += fmt::format("  effect {}; steps of a clean delivery: {}\n", s.effect,
                     fmt::join(s.crash_points, ", "));
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"fault", "expected", "outcomes", "schedules", ""});
  for (const GradedCell& g : grade.cells) {
    rows.push_back({std::string(g.cell.fault->name), std::string(ToString(g.expected)),
                    explore::CellLabel(g.cell), SchedulesRun(g.cell), Status(g)});
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
    if (!g.cell.exhaustive) {
      out += fmt::format(
          "\n{}: {} in {} of about {} schedules ({} in order, {} at random with seed {}), not "
          "exhaustive: the budget ran out (--budget)\n",
          g.cell.fault->name,
          g.cell.Safe() ? "no failure found" : fmt::format("{} failed", g.cell.Failing()),
          g.cell.schedules, About(g.cell.estimated), g.cell.schedules - g.cell.sampled, g.cell.sampled,
          g.cell.sample_seed);
    }
    if (g.shown() == nullptr || !g.replay) continue;
    const explore::Counterexample& c = *g.shown();
    // A cell as expected tells its schedules in one line; a failing one (or one whose broken
    // behaviour was asked for) tells the shortest in full.
    if (g.passed && !AskedForBreakage(g.expected)) {
      out += fmt::format(
          "\n{} ({}): {} in {} of {} schedules{}\n", g.cell.fault->name,
          g.expected == CellExpectation::kAny ? "not graded" : "as expected", explore::CellLabel(g.cell),
          g.cell.Failing(), g.cell.schedules,
          g.expected == CellExpectation::kAny
              ? "; a resend under a new MessageId is a new message to a key on the MessageId "
                "(only a key on the order catches it)"
              : "; flagged for a person where the consumer could not know");
      continue;
    }
    out += fmt::format("\n{} ({}): {} of {} schedules fail; the shortest: {}{} steps{}, ends {}:\n",
                       g.cell.fault->name, g.passed ? "as expected" : "fails the check",
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
    // An email consumer's run (no subscriber reserves) says nothing of reservations, unless
    // some were made: a reservation that happened is always told.
    bool reserves = g.replay->figures.reserved != 0;
    for (const explore::Strategy* sub : c.plan.subscribers) reserves = reserves || sub->effect == "stock";
    out += fmt::format("  final: {}\n", explore::FormatFigures(g.replay->figures, reserves));
    if (reserves) {
      for (const std::string& line : FormatBookFigures(g.books)) out += "    " + line + "\n";
    }
    if (!g.replay->note.empty()) out += fmt::format("  note: {}\n", g.replay->note);
    if (with_trace) {
      out += "  trace:\n";
      for (const TraceEvent& e : g.events) out += "    " + explore::ExplorerTraceLine(e) + "\n";
    }
  }
  out += StaleRefusalNote(grade);
  if (!grade.untaken.empty()) {
    out += fmt::format(
        "\nnever taken in the {} schedules run{} (the steps they lead to never ran this way):\n",
        grade.Schedules(), grade.Exhaustive() ? "" : " (not every schedule: the budget ran out)");
    for (const std::string& branch : grade.untaken) out += "  " + branch + "\n";
  }
  out += fmt::format("\n{}: {} of {} faults as expected, {} schedules\n", s.name,
                     std::count_if(grade.cells.begin(), grade.cells.end(),
                                   [](const GradedCell& g) { return g.passed; }),
                     grade.cells.size(), grade.Schedules());
  return out;
}

namespace {

nlohmann::ordered_json BooksToJson(const std::vector<BookFigure>& books) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const BookFigure& b : books) {
    nlohmann::ordered_json orders = nlohmann::ordered_json::array();
    for (const explore::LogicalOrder& o : b.orders) {
      orders.push_back({{"order", o.order_id}, {"quantity", o.quantity}});
    }
    out.push_back({{"book", b.book_id},
                   {"title", b.title},
                   {"reservedBefore", b.before},
                   {"reservedAfter", b.after},
                   {"published", b.published},
                   {"orders", orders}});
  }
  return out;
}

}  // namespace

nlohmann::ordered_json GradeToJson(const Grade& grade) {
  nlohmann::ordered_json j;
  j["file"] = grade.file;
  j["name"] = grade.strategy->name;
  j["effect"] = grade.strategy->effect;
  j["steps"] = grade.strategy->crash_points;
  j["passed"] = grade.Passed();
  j["exhaustive"] = grade.Exhaustive();
  j["verdict"] = grade.Word();
  const auto [points, of] = grade.Score();
  j["score"] = {{"points", points}, {"of", of}};
  j["seconds"] = grade.elapsed_ms / 1000.0;
  j["schedules"] = grade.Schedules();
  nlohmann::ordered_json cells = nlohmann::ordered_json::array();
  for (const GradedCell& g : grade.cells) {
    nlohmann::ordered_json c;
    c["fault"] = g.cell.fault->name;
    c["expected"] = ToString(g.expected);
    c["passed"] = g.passed;
    c["cell"] = explore::CellLabel(g.cell);
    c["points"] = g.expected == CellExpectation::kAny ? 0 : FaultPoints(*g.cell.fault);
    c["schedules"] = g.cell.schedules;
    c["exhaustive"] = g.cell.exhaustive;
    // Schedules whose pass may rest on SQLite refusing a stale transaction's write.
    c["staleRefusals"] = g.cell.stale_refused;
    if (!g.cell.exhaustive) {
      c["sampled"] = g.cell.sampled;
      c["estimated"] = g.cell.estimated;
      c["sampleSeed"] = g.cell.sample_seed;
    }
    nlohmann::ordered_json counts;
    for (size_t i = 0; i < explore::kOutcomeCount; ++i) {
      counts[std::string(explore::ToString(explore::OutcomeAt(i)))] = g.cell.counts[i];
    }
    c["counts"] = counts;
    if (g.shown() != nullptr && g.replay) {
      const explore::Counterexample& shown = *g.shown();
      c["counterexample"] = {{"variant", shown.variant},
                             {"outcome", explore::ToString(g.replay->outcome)},
                             {"length", g.replay->picks.size()},
                             {"steps", g.replay->steps},
                             {"deliveries", explore::DeliveriesToJson(g.replay->deliveries)},
                             {"figures", explore::FiguresToJson(g.replay->figures)},
                             {"books", BooksToJson(g.books)},
                             {"note", g.replay->note}};
    } else {
      c["counterexample"] = nullptr;
    }
    cells.push_back(c);
  }
  j["cells"] = cells;
  j["untaken"] = grade.untaken;
  const std::string note = StaleRefusalNote(grade);  // "\nnote: ...\n" or ""
  j["note"] = note.empty() ? nlohmann::ordered_json(nullptr)
                           : nlohmann::ordered_json(note.substr(1, note.size() - 2));
  return j;
}

}  // namespace dedupsim::files
