// A schedule read as deliveries: each delivery attempt (which instance, which copy of which
// message, the broker's number for the attempt), the steps it took, what it committed and
// how it ended. Built from the events a replay recorded and the steps the scheduler handed
// out, never from what a consumer is expected to do: "committed: UPDATE StockItems" is
// there only when that write's commit (its own, outside a transaction, or the COMMIT of
// its transaction) is in the trace before the attempt ended.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "explore/plan.h"
#include "explore/scheduler.h"
#include "trace/trace.h"

namespace dedupsim::explore {

// The attempts of a replayed run in the order they started. events: the run's trace;
// run: its result (ScheduleResult::attempts maps each step to its attempt). Throws
// std::logic_error when the trace and the steps disagree.
std::vector<DeliveryAttempt> DeliveriesOf(const Plan& plan, const ScheduleResult& run,
                                          const std::vector<TraceEvent>& events);

// "1-3, 5"
std::string StepRanges(const std::vector<size_t>& steps);
std::string_view ToString(DeliveryEnd end);

// "2 deliveries:" and one block per attempt, each line after the first indented by indent.
std::string FormatDeliveries(const std::vector<DeliveryAttempt>& deliveries,
                             std::string_view indent);
nlohmann::ordered_json DeliveriesToJson(const std::vector<DeliveryAttempt>& deliveries);

}  // namespace dedupsim::explore
