// The --timeline view: a self-contained SVG (no scripts, fonts or links to fetch) that
// draws each scenario's run against a time axis in ms, as the --trace view stamps it, or,
// for a scenario driven by a manual clock, against its steps in order with the simulated
// day written where the clock was set. One lane per actor (each consumer instance and
// process, a restarted process apart, producer, broker, operator, database, and the
// scenario's own checks in grey); a bar per transaction from BEGIN to COMMIT or ROLLBACK
// (or to the death of its process), a short bar per autocommit statement; lock waits
// hatched; crash points, hooks, deliveries, outcomes, acks, emails and recoveries marked;
// sub-runs titled. Labels are placed in rows so that none overlaps another or a leader
// line. Several scenarios are stacked as sections of one drawing on one time scale.
#pragma once

#include <string>
#include <vector>

#include "lesson/scenario.h"
#include "trace/trace.h"

namespace dedupsim {

struct TimelineSection {
  std::string scenario;  // its name, the section's title
  std::string line;      // the scenario's text line, under the title
  std::vector<TraceEvent> events;
  std::vector<FigureMark> marks{};  // the line's judged figures, coloured as on the line
};

// The whole SVG document, XML declaration first.
std::string SvgTimeline(const std::vector<TimelineSection>& sections);

}  // namespace dedupsim
