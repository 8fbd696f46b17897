// Color for the run's text lines on a terminal: the [tag] in bold cyan, the figures in
// green when they are what the lesson says must come out and red when not. Whether to
// color at all follows --color auto|always|never and the NO_COLOR convention
// (https://no-color.org: set and not empty, it turns auto color off; --color always still
// wins, as a per-run choice). Stripping the escape codes gives back the plain line.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dedupsim {

enum class ColorChoice { kAuto, kAlways, kNever };

// "auto", "always", "never"; nullopt for anything else.
std::optional<ColorChoice> ParseColorChoice(std::string_view text);

// Whether to color: always/never as said; auto only on a terminal, with NO_COLOR unset or
// empty and TERM not "dumb". no_color and term are the variables' values, or null.
bool ShouldColor(ColorChoice choice, bool is_terminal, const char* no_color, const char* term);

// The line with its leading "[tag]" and the figures after its first " -> " in color.
// Figures are numbers, True/False, and the word after ": ". as_expected picks green or red.
std::string ColorizeLine(std::string_view line, bool as_expected);

// The text without ANSI escape sequences (ESC [ ... letter).
std::string StripColor(std::string_view text);

}  // namespace dedupsim
