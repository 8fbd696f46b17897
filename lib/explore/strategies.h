// The table of strategies the explorer knows: the rows of its matrix, one per entry of the
// registry of consumers (consumers/registry.h), in its order.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "explore/strategy.h"

namespace dedupsim::explore {

std::span<const Strategy* const> AllStrategies();
// nullptr when no strategy has that name.
const Strategy* FindStrategy(std::string_view name);
// The row of a registry entry. Every entry has one.
const Strategy& StrategyOf(const ConsumerEntry& consumer);
// "naive, check-then-process, ..." for error messages.
std::string StrategyNames();

}  // namespace dedupsim::explore
