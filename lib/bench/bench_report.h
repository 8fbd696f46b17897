// Views of one BenchReport: the table a teacher reads on a terminal and the JSON object a
// CI script asserts on. Both are built from the same figures, so they cannot disagree.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "bench/bench.h"

namespace dedupsim {

// {"command":"bench", the options, "results":[{"strategy":"raw","messagesPerSecond":...},
// ...], "ratios":{"inboxToRaw":..., "inboxToNaive":...}, "promisesHeld":true}
nlohmann::ordered_json BenchReportToJson(const BenchReport& report);

// A heading line, one row per strategy, the ratios, and a note for each broken promise.
std::string FormatBenchTable(const BenchReport& report);

}  // namespace dedupsim
