// The table of strategies the explorer knows: the rows of its matrix, in the order it
// prints them.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "explore/strategy.h"

namespace dedupsim::explore {

std::span<const Strategy* const> AllStrategies();
// nullptr when no strategy has that name.
const Strategy* FindStrategy(std::string_view name);
// "naive, check-then-process, ..." for error messages.
std::string StrategyNames();

}  // namespace dedupsim::explore
