// The --trace view: one line per step, "ms since start, instance and pid, step, result".
#pragma once

#include <string>
#include <vector>

#include "trace/trace.h"

namespace dedupsim {

std::string FormatTraceLine(const TraceEvent& event);
std::string FormatTrace(const std::vector<TraceEvent>& events);

}  // namespace dedupsim
