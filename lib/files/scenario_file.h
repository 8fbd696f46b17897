// A lesson written in a file (a scenario file): which consumers run (built-in rows of the
// explorer or consumer files), the messages and their deliveries (copies, a delay, two
// copies at once, a producer's resend with the same or a new id), faults at hook points
// (`hold 500ms at BeforeCommit`, `crash at AfterSend`), the figures read back (SQL over the
// final state on the probe connection, counts of what the deliveries did), the line (a
// template over the figures) and what --check expects of them (expressions, expression.h).
// The format is documented by example in docs/files.md.
//
// Running one (scenarios/file_scenario.h) reuses the scenarios' machinery: Restock,
// OpenTraced/OpenProbe, the crash runner (RunCrashingDelivery, so --crash-mode throw/exit/kill) and
// the pair of racing instances (RunGatedPair, so --hold-ms/--stagger-ms/--instances). Faults
// reach a consumer through Connection::SetHookFaults, at the hook points it already passes.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "explore/strategy.h"
#include "files/consumer_file.h"
#include "files/expression.h"
#include "files/file_strategy.h"
#include "lesson/scenario.h"

namespace dedupsim::files {

struct ScenarioConsumer {
  std::string name;  // how deliveries name it
  Position at;
  const explore::Strategy* builtin = nullptr;  // a registry entry's explorer row, or
  std::shared_ptr<FileStrategy> file;          // a consumer file
  std::vector<std::string> hook_points;        // where faults may strike

  const explore::Strategy& strategy() const { return builtin ? *builtin : file->strategy(); }
};

struct ScenarioMessage {
  std::string name;
  Position at;
  std::string resend_of;  // a producer's resend of that message ("" for a new order)
  bool new_id = false;    // the resend carries a new MessageId (same order)
};

struct Fault {
  enum class Kind { kHold, kCrash };
  Kind kind = Kind::kHold;
  std::chrono::milliseconds hold{0};
  std::string point;  // the hook point
  Position at;
};

struct ScenarioDelivery {
  Position at;
  size_t message = 0;          // index into messages
  size_t consumer = 0;         // index into consumers
  Expression copies;           // how many copies, one after another (or two at once with race)
  bool race = false;           // two copies at once, instances A and B (A holds at its fault)
  std::optional<Fault> fault;  // on the first copy
  std::chrono::milliseconds stagger{100};  // race: B starts this long after A holds
  std::chrono::milliseconds delay{0};      // waited before the first copy
  std::string instance;                    // the trace's instance ("" = the consumer's name)
};

struct ScenarioFigure {
  enum class Kind { kSql, kCount, kEach };
  std::string name;
  Position at;
  Kind kind = Kind::kSql;
  std::string sql;       // kSql: one read-only statement, first column of the first row
  Position sql_at;       // kSql: where the statement's first token is written
  SqlRules rules;        // kSql: what it may read when it runs (the check found them)
  std::vector<std::string> parameters;  // kSql: its parameters by index, as written (":BookId")
  std::string outcome;   // kCount/kEach: processed, skipped, needs-reconciliation, failed,
                         // crashed, waited (a race's B blocked on A's lock), deliveries
                         // (count only), emails (count only)
  std::string consumer;  // kCount/kEach: only this consumer's deliveries ("" = all)
};

struct ScenarioExpectation {
  std::string figure;
  Position at;
  Expression value;
};

struct ScenarioFile {
  std::string path;
  std::string name;  // the file's stem unless it says otherwise
  std::string tag;
  std::string summary;
  std::string lesson;
  std::string hook_points_text;
  std::string try_next;
  std::vector<ScenarioConsumer> consumers;
  std::vector<ScenarioMessage> messages;
  std::vector<ScenarioDelivery> deliveries;
  std::vector<ScenarioFigure> figures;
  std::string line;  // the template: {figure} for a figure, {{ and }} for braces
  Position line_at;
  std::vector<ScenarioExpectation> expectations;
  unsigned traits = 0;  // ScenarioTraits: the options this file takes
};

// Reads and checks path (and the consumer files it names, relative to it). Throws
// FileError ("FILE:LINE:COLUMN: ...") for anything wrong. Only reads.
ScenarioFile LoadScenarioFile(const std::string& path);
// The scenario files of a folder (*.toml, by name); throws FileError when it cannot be read
// or holds none.
std::vector<std::string> ScenarioFilesIn(const std::string& folder);

// The line and the expectations over a loaded file: files/scenario_line.h. Reading each
// table: files/scenario_parts.h (private to lib/files).

}  // namespace dedupsim::files
