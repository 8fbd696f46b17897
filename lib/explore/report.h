// Views of the explorer's results: the matrix as text and JSON, a counterexample with its
// replayed trace, the seeded runs. Nothing here runs anything; the command prints these.
// The text matrix and the JSON carry the same counts; only the timing line (text) and
// elapsedMs, schedulesPerSecond (JSON) change between two runs with the same seed.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "explore/explorer.h"
#include "explore/random_mode.h"
#include "trace/trace.h"

namespace dedupsim::explore {

// "once", "twice ×2", "twice ×3 lost ×1": the outcomes other than once with their counts.
std::string CellLabel(const CellResult& cell);

// The matrix, every line but the timing line.
std::string FormatMatrix(const MatrixResult& matrix);
// "explored in 812 ms: 1520 schedules/s": the one line that changes from run to run.
std::string FormatTiming(const MatrixResult& matrix);
nlohmann::ordered_json MatrixToJson(const MatrixResult& matrix);

// What the final state held: reserved, Inbox rows, emails, flags.
std::string FormatFigures(const Figures& figures);
nlohmann::ordered_json FiguresToJson(const Figures& figures);

// The cell's shortest failing schedule: a header, the replay's trace (one FormatTraceLine
// per event), the final figures, and the command that prints it again (backend_args, such
// as " --backend postgres", appended to it).
// "shortest failing schedule: 7 steps, crash at X, outcome twice" (or, for a schedule
// flagged for reconciliation, says it is not a failure).
// A line of a replay's trace (FormatTraceLine, without the delivery tag each event
// carries: the attempt's "deliver" line names its message and attempt).
std::string ExplorerTraceLine(const TraceEvent& event);
// "2 deliveries, " for a replay read as deliveries, else "".
std::string DeliveriesCount(const ScheduleResult& replay);
std::string CounterexampleHeadline(const CellResult& cell, const ScheduleResult& replay);
std::string FormatCounterexample(const CellResult& cell, const ScheduleResult& replay,
                                 const std::vector<TraceEvent>& events, uint64_t seed,
                                 std::string_view backend_args = "");
nlohmann::ordered_json CounterexampleToJson(const CellResult& cell, const ScheduleResult& replay);

std::string FormatRandom(const RandomResult& result);
std::string FormatRandomTiming(const RandomResult& result);
nlohmann::ordered_json RandomToJson(const RandomResult& result);
std::string FormatRandomReplay(const Strategy& strategy, uint64_t seed, int64_t run,
                               const RandomMix& mix, const ScheduleResult& replay,
                               const std::vector<TraceEvent>& events);
nlohmann::ordered_json RandomReplayToJson(const Strategy& strategy, uint64_t seed, int64_t run,
                                          const ScheduleResult& replay);

}  // namespace dedupsim::explore
