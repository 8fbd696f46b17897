// The `dedupsim explain` view: a scenario's lesson, its hook points and what to try next,
// from the Scenario's own fields, wrapped for a terminal.
#pragma once

#include <string>
#include <string_view>

#include "lesson/scenario.h"

namespace dedupsim {

// Wraps text to width columns. Paragraphs (split by blank lines) are filled; a line that
// starts with a space (a command to type) is kept as it is. Every output line starts with
// indent, which counts toward the width.
std::string WrapText(std::string_view text, size_t width, std::string_view indent = "");

// The whole explanation, ending with a newline.
std::string ExplainScenario(const Scenario& scenario, size_t width);

}  // namespace dedupsim
