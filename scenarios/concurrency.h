// Shared by the scenarios where two inbox consumers run at once (concurrent,
// concurrent-different): run the pair, and read who waited.
#pragma once

#include <nlohmann/json.hpp>

#include "instances.h"
#include "message.h"
#include "scenario.h"

namespace dedupsim {

struct PairOutcome {
  bool first_processed = false;
  bool second_processed = false;
  InstanceResult first;
  InstanceResult second;
  // The second instance's busy handler ran: it waited for the first's write lock.
  bool SecondWaited() const { return second.busy.calls > 0; }
};

// Instance A handles first_message and holds its transaction options.hold before commit;
// instance B starts options.stagger later with second_message and holds nothing.
PairOutcome RunInboxPair(ScenarioEnv& env, const OrderPlaced& first_message,
                         const OrderPlaced& second_message);

// secondWaited, waitMs, busyRetries, secondMs, firstMs.
void AddWaitFigures(const PairOutcome& pair, nlohmann::ordered_json& figures);

// The secondWaited expectation for these options, when the outcome is clear.
nlohmann::ordered_json ExpectedWait(const RunOptions& options);

}  // namespace dedupsim
