// Trace events to and from JSON: for the --format json view and for carrying a child
// process's events back to its parent.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "trace/trace.h"

namespace dedupsim {

nlohmann::ordered_json EventToJson(const TraceEvent& event);
nlohmann::ordered_json EventsToJson(const std::vector<TraceEvent>& events);
std::vector<TraceEvent> EventsFromJson(const nlohmann::json& array);

}  // namespace dedupsim
