// The table of faults: the columns of the explorer's matrix. A fault turns a strategy into
// the plans to explore (most faults have one; the crash fault has one per crash point).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/message.h"
#include "explore/plan.h"

namespace dedupsim::explore {

// How big the concurrent fault's world is: this many copies of the message at once,
// copy k handed to instance k mod instances (so each instance takes its copies one after
// another). The matrix's default is two copies in two instances.
struct WorldSize {
  int instances = 2;
  int deliveries = 2;
  bool operator==(const WorldSize&) const = default;
};

struct Fault {
  std::string_view name;     // kebab-case, used on the command line
  std::string_view summary;  // one line
  // The plans for strategy. ids makes every message, order and book id, so the same seed
  // gives the same plans.
  std::vector<Plan> (*plans)(const Strategy& strategy, IdGenerator& ids) = nullptr;
  // For a fault whose size can be chosen: the plans for that size (plans is this with
  // the default WorldSize). Null: the fault has one size.
  std::vector<Plan> (*sized_plans)(const Strategy& strategy, IdGenerator& ids,
                                   const WorldSize& world) = nullptr;
};

std::span<const Fault* const> AllFaults();
// nullptr when no fault has that name.
const Fault* FindFault(std::string_view name);
std::string FaultNames();

// How long the broker waits for an ack before it redelivers (lost-ack).
inline constexpr std::chrono::milliseconds kLockDuration{30000};

// A new logical order (own book) and its message, with ids from ids.
LogicalOrder NewLogicalOrder(IdGenerator& ids, int64_t quantity);
OrderPlaced NewMessage(IdGenerator& ids, const LogicalOrder& order);

}  // namespace dedupsim::explore
