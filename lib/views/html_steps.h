// The --html view: one self-contained page (script and style inline, nothing fetched) to
// step through a run on a projector. On the left the steps in order; on the right, for the
// current step, the tables as the scenario's probe read them right after it (captured
// while the run went on, see TableProbe), which connection holds the write lock and who
// waits for it, each message's delivery count as the broker numbered it, and the cells the
// step changed, highlighted. Keys: right/left or space to step, Home/End; a slider; a link
// (#step-N) per step.
#pragma once

#include <string>
#include <vector>

#include "trace/trace.h"
#include "world/table_probe.h"

namespace dedupsim {

struct HtmlSection {
  std::string scenario;
  std::string line;
  std::vector<TraceEvent> events;
  std::vector<TablesSnapshot> snapshots;  // taken after events of this process
};

// The whole HTML document.
std::string StepThroughPage(const std::vector<HtmlSection>& sections);

}  // namespace dedupsim
