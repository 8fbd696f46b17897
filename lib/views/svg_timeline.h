// The --timeline view: a self-contained SVG (no scripts, fonts or links to fetch) that
// draws each scenario's run against a time axis in ms, as the --trace view stamps it. One
// lane per consumer instance and process; a bar per transaction from BEGIN to COMMIT or
// ROLLBACK (or to the death of its process), a short bar per autocommit statement; lock
// waits hatched; crash points, hooks, deliveries, emails and recoveries marked. Several
// scenarios are stacked as sections of one drawing, each with its own axis.
#pragma once

#include <string>
#include <vector>

#include "trace.h"

namespace dedupsim {

struct TimelineSection {
  std::string scenario;  // its name, the section's title
  std::string line;      // the scenario's text line, under the title
  std::vector<TraceEvent> events;
};

// The whole SVG document, XML declaration first.
std::string SvgTimeline(const std::vector<TimelineSection>& sections);

}  // namespace dedupsim
