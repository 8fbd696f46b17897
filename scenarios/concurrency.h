// Shared by the scenarios where two inbox consumers run at once (concurrent,
// concurrent-different): run the pair, and read who waited.
#pragma once

#include <nlohmann/json.hpp>

#include "instances.h"
#include "message.h"
#include "scenario.h"
#include "store/store.h"

namespace dedupsim {

struct PairOutcome {
  bool first_processed = false;
  bool second_processed = false;
  InstanceResult first;
  InstanceResult second;
  // On a server database (PostgreSQL): the second instance's statements as the server saw
  // them from a side connection; then `watched` is true and busy counts nothing.
  bool watched = false;
  std::vector<WatchedStatement> second_statements;
  // SQLite: the second instance's busy handler ran (it waited for the first's write lock).
  // A server: one of its statements waited for a lock the first held.
  bool SecondWaited() const;
  // What the second instance's first wait was on: "database" (SQLite), "row StockItems",
  // "key Inbox" (a server), or "none".
  std::string SecondWaitedOn() const;
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
