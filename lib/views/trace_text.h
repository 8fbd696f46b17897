// The --trace view: one line per step, "ms since start, instance and pid, step, result": a
// statement's SQL text and what it returned, any other step in DescribeStep's words (the
// pictures' words).
#pragma once

#include <string>
#include <vector>

#include "trace/trace.h"

namespace dedupsim {

std::string FormatTraceLine(const TraceEvent& event);
std::string FormatTrace(const std::vector<TraceEvent>& events);

}  // namespace dedupsim
