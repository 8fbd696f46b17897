// Durations as the command line writes them: a whole number and one unit, d (days),
// h (hours), m (minutes) or s (seconds): 14d, 36h, 90m, 30s. Used by `cleanup
// --older-than` and `run --dedup-window`.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace dedupsim {

// The duration text stands for, or nullopt for anything else: no unit or an unknown one
// (14x), a sign (-14d, +14d), a fraction, spaces, or more than 100 years.
std::optional<std::chrono::milliseconds> ParseDuration(std::string_view text);

// The longest duration ParseDuration takes: 36525d (100 years).
inline constexpr std::chrono::days kLongestDuration{36525};

// Why ParseDuration refuses text, in a few words ("not a duration like 14d, 36h, 90m or
// 30s", "longer than the limit of 36525d (100 years)"); empty when it does not.
std::string DurationProblem(std::string_view text);

// The shortest way to write d in the units ParseDuration reads (14d, 36h, 90m, 30s), or
// in ms when it is not a whole number of seconds.
std::string FormatDuration(std::chrono::milliseconds d);

}  // namespace dedupsim
