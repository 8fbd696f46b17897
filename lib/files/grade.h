// The grader behind `dedupsim check`: runs a consumer (a file, or any strategy) through the
// explorer's faults, compares each cell with the verdict expected of it, and keeps the
// shortest failing schedule of every cell with its replayed trace. The views (text, JSON)
// are here too; the command only parses, calls Grade, prints and picks the exit status.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "explore/explorer.h"
#include "explore/faults.h"
#include "trace/trace.h"
#include "store/tables_reader.h"

namespace dedupsim::files {

// What a cell is expected to show (`check --expect FAULT=safe`). Not called Verdict: that
// is a consumer's word to the broker (world/broker/broker.h).
enum class CellExpectation {
  kSafe,    // every schedule ends once or flagged for reconciliation (the default)
  kOnce,    // every schedule ends once
  kUnsafe,  // some schedule breaks the invariant (twice, lost, deadlock or error)
  kTwice,   // some schedule ends twice; likewise for the others
  kLost,
  kReconcile,
  kDeadlock,
  kError,
  kAny,  // not graded: shown only (producer-duplicate by default, see DefaultCellExpectation)
};

std::string_view ToString(CellExpectation v);
std::optional<CellExpectation> ParseCellExpectation(std::string_view name);
std::string CellExpectationNames();  // "safe, once, unsafe, twice, ..."

// What a fault is graded against unless told otherwise: safe, except producer-duplicate,
// which is shown but not graded (a resend under a new MessageId is a new message to any
// consumer keyed on the MessageId; only a natural key catches it).
CellExpectation DefaultCellExpectation(const explore::Fault& fault);

// True when the cell shows the verdict.
bool Holds(CellExpectation v, const explore::CellResult& cell);

// What a fault is worth in a file's score (docs/check.md): clean 1, duplicate 2, crash 2,
// concurrent 2, orders 1, second-subscriber 1, lost-ack 1 (10 in all); producer-duplicate 0
// (shown, not graded). A fault graded with --expect is worth the same.
int FaultPoints(const explore::Fault& fault);

// A book of the shown schedule's plan, as it started and as the replay left it (read from
// the explorer's database file after the replay), with the orders the plan names on it.
struct BookFigure {
  std::string book_id;
  std::string title;
  int64_t before = 0;  // Reserved when the plan started
  int64_t after = 0;   // Reserved when the replay ended
  std::vector<explore::LogicalOrder> orders;
  // Per order (as orders): the publish steps its deliveries ran in the replay; empty when
  // no delivery of the replay published.
  std::vector<int64_t> published;
};

// "order 59d47572 (Dune, qty 3): reserved 6 = twice", one per order of a book with one;
// a book with several orders told together (which of them moved it is not read), a book
// with none told untouched or moved.
std::vector<std::string> FormatBookFigures(const std::vector<BookFigure>& books);

struct GradedCell {
  explore::CellResult cell;
  CellExpectation expected = CellExpectation::kSafe;
  bool passed = false;
  // The shortest failing schedule, replayed and traced (when the cell has one).
  std::optional<explore::ScheduleResult> replay;
  std::vector<TraceEvent> events;
  // The tables after each of those steps, read from the files (GradeStrategy with_tables).
  std::vector<TablesSnapshot> tables;
  // Each book's Reserved before and after the replay (SQLite; empty on PostgreSQL).
  std::vector<BookFigure> books;

  // The schedule replayed: the shortest that broke the invariant, else the shortest that
  // did not end once (a reconcile where one was called for); null when every one was once.
  const explore::Counterexample* shown() const {
    if (cell.shortest_unsafe) return &*cell.shortest_unsafe;
    return cell.shortest ? &*cell.shortest : nullptr;
  }
};

struct Grade {
  const explore::Strategy* strategy = nullptr;
  std::string file;  // where it was read from, or ""
  std::vector<GradedCell> cells;
  double elapsed_ms = 0;
  // A file's reactions (on-... = "...") that no schedule run took, as
  // "FILE:LINE:COLUMN on-no-row = \"throw\"" (FileStrategy::UntakenBranches): the code
  // behind them never ran. Set by the caller; empty for a built-in strategy.
  std::vector<std::string> untaken;

  // Every cell as expected. A cell explored only in part (the budget ran out) that found
  // no failure counts as expected here; Exhaustive() says whether any was.
  bool Passed() const;
  bool Exhaustive() const;
  // "passes", "FAILS", or "no failure found, not exhaustive" (passed, not exhaustively).
  std::string_view Word() const;
  // The points of the faults graded as expected (FaultPoints), of all graded faults'.
  std::pair<int, int> Score() const;
  int64_t Schedules() const;
};

struct Expectation {
  const explore::Fault* fault = nullptr;
  CellExpectation verdict = CellExpectation::kSafe;
};

// How long grading a file may take (dedupsim check --budget). The cells are searched
// quickest kind first, each with an equal share of the time left (a twentieth is kept for
// the replays), so a quick cell's unused time is the later ones'; a cell that runs out
// samples what is left (explore::CellBudget), and once every cell had its turn, the time
// still left is shared among the cells that ran out, searched again from the start.
struct GradeBudget {
  std::chrono::duration<double> seconds{0};  // 0: no budget, every schedule
  uint64_t seed = 1;                         // the random walks' seed
  // When the budget started (the command's start: reading the file counts); nullopt: when
  // GradeStrategy is called.
  std::optional<std::chrono::steady_clock::time_point> since;
};

// Explores the strategy under each fault; a fault without an expectation gets its
// DefaultCellExpectation. with_tables: read the tables after each step of every replay.
Grade GradeStrategy(explore::Explorer& explorer, const explore::Strategy& strategy,
                    const std::vector<const explore::Fault*>& faults,
                    const std::vector<Expectation>& expectations, bool with_tables = false,
                    const GradeBudget& budget = {});

// The passing cells in which SQLite refused a delivery's write because its transaction had
// read before another instance wrote (SQLITE_BUSY), told as one note: the pass may rest on
// a refusal PostgreSQL does not make. "" when none; else "\nnote: ..." ending in a newline.
std::string StaleRefusalNote(const Grade& grade);

// The row, then for every failing cell its shortest counterexample step by step, then the
// verdict. with_trace adds the replay's trace under each counterexample.
std::string FormatGrade(const Grade& grade, bool with_trace);
nlohmann::ordered_json GradeToJson(const Grade& grade);

}  // namespace dedupsim::files
