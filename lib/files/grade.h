// The grader behind `dedupsim check`: runs a consumer (a file, or any strategy) through the
// explorer's faults, compares each cell with the verdict expected of it, and keeps the
// shortest failing schedule of every cell with its replayed trace. The views (text, JSON)
// are here too; the command only parses, calls Grade, prints and picks the exit status.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "explore/explorer.h"
#include "explore/faults.h"
#include "trace/trace.h"
#include "world/table_probe.h"

namespace dedupsim::files {

// What a cell is expected to show.
enum class Verdict {
  kSafe,    // every schedule ends once or flagged for reconciliation (the default)
  kOnce,    // every schedule ends once
  kUnsafe,  // some schedule breaks the invariant (twice, lost, deadlock or error)
  kTwice,   // some schedule ends twice; likewise for the others
  kLost,
  kReconcile,
  kDeadlock,
  kError,
  kAny,  // not graded: shown only (producer-duplicate by default, see DefaultVerdict)
};

std::string_view ToString(Verdict v);
std::optional<Verdict> ParseVerdict(std::string_view name);
std::string VerdictNames();  // "safe, once, unsafe, twice, ..."

// What a fault is graded against unless told otherwise: safe, except producer-duplicate,
// which is shown but not graded (a resend under a new MessageId is a new message to any
// consumer keyed on the MessageId; only a natural key catches it).
Verdict DefaultVerdict(const explore::Fault& fault);

// True when the cell shows the verdict.
bool Holds(Verdict v, const explore::CellResult& cell);

struct GradedCell {
  explore::CellResult cell;
  Verdict expected = Verdict::kSafe;
  bool passed = false;
  // The shortest failing schedule, replayed and traced (when the cell has one).
  std::optional<explore::ScheduleResult> replay;
  std::vector<TraceEvent> events;
  // The tables after each of those steps, read from the files (GradeStrategy with_tables).
  std::vector<TablesSnapshot> tables;
};

struct Grade {
  const explore::Strategy* strategy = nullptr;
  std::string file;  // where it was read from, or ""
  std::vector<GradedCell> cells;
  double elapsed_ms = 0;

  bool Passed() const;
  int64_t Schedules() const;
};

struct Expectation {
  const explore::Fault* fault = nullptr;
  Verdict verdict = Verdict::kSafe;
};

// Explores the strategy under each fault; a fault without an expectation gets its
// DefaultVerdict. with_tables: read the tables after each step of every replay.
Grade GradeStrategy(explore::Explorer& explorer, const explore::Strategy& strategy,
                    const std::vector<const explore::Fault*>& faults,
                    const std::vector<Expectation>& expectations, bool with_tables = false);

// The row, then for every failing cell its shortest counterexample step by step, then the
// verdict. with_trace adds the replay's trace under each counterexample.
std::string FormatGrade(const Grade& grade, bool with_trace);
nlohmann::ordered_json GradeToJson(const Grade& grade);

}  // namespace dedupsim::files
