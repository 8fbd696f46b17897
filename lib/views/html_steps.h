// The --html view: one self-contained page (script and style inline, nothing fetched) to
// step through a run on a projector. On the left the steps in order (sub-runs and resets
// are titled steps of their own); on the right, for the current step, the tables as the
// scenario's probe read them right after it (captured while the run went on, see
// TablesReader), one lock state per actor (holds, waits for what, in a transaction), each
// message's delivery count as the broker numbered it, and what the step changed, matched
// row by row on the primary key: new rows, changed cells, deleted rows struck out. A
// transaction's changes show at its COMMIT, when other connections can see them. Every
// step's words are DescribeStep's; right and wrong for the business are coloured as on the
// run's lines. Keys: right/left or space to step, Home/End; a slider; a link (#step-N) per
// step.
#pragma once

#include <string>
#include <vector>

#include "lesson/scenario.h"
#include "trace/trace.h"
#include "store/tables_reader.h"

namespace dedupsim {

struct HtmlSection {
  std::string scenario;
  std::string line;
  std::vector<TraceEvent> events;
  std::vector<TablesSnapshot> snapshots;  // taken after events of this process
  std::vector<FigureMark> marks{};        // the line's judged figures, coloured as on the line
  // How a holder's locks are said: "sqlite" (the file's write lock), "postgres" (the rows
  // and keys its transaction wrote).
  std::string backend = "sqlite";
  // Ids as check's text names them (ShortIds::Cut: "78833635…"), not m1, id-1.
  bool ids_as_text = false;
};

// The whole HTML document.
std::string StepThroughPage(const std::vector<HtmlSection>& sections);

// The data the page steps through, as the page's script reads it (exposed for tests): per
// step its text, tone, facts, snapshot and the changes it made.
std::string StepThroughData(const std::vector<HtmlSection>& sections);

}  // namespace dedupsim
