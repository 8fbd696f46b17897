// Color for the run's text lines on a terminal: the [tag] in bold cyan, and each figure the
// scenario judged (FigureMark) green when correct and red when doubled or lost, whether or
// not the lesson expects it. A line whose figures differ from the lesson's (--check) has its
// tag on a yellow background instead: a separate marker, not a color of the figures. Whether to
// color at all follows --color auto|always|never and the NO_COLOR convention
// (https://no-color.org: set and not empty, it turns auto color off; --color always still
// wins, as a per-run choice). Each coloured figure ends with its ✓ or ✗, as in the pictures;
// stripping the escape codes and those marks (StripColor) gives back the plain line.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lesson/scenario.h"

namespace dedupsim {

enum class ColorChoice { kAuto, kAlways, kNever };

// "auto", "always", "never"; nullopt for anything else.
std::optional<ColorChoice> ParseColorChoice(std::string_view text);

// Whether to color: always/never as said; auto only on a terminal, with NO_COLOR unset or
// empty and TERM not "dumb". no_color and term are the variables' values, or null.
bool ShouldColor(ColorChoice choice, bool is_terminal, const char* no_color, const char* term);

// A piece of a run's line: plain text, or a judged figure followed by its " ✓" (right) or
// " ✗" (wrong), the mark every coloured figure carries for readers who do not see colour.
struct JudgedPiece {
  std::string text;
  std::optional<bool> correct;  // nullopt: not judged
};

// line cut into its plain text and its judged figures, in order, each judged figure with its
// mark: the one way the terminal and every picture show a line's verdicts (docs/cli.md,
// "Color"). Marks outside the line, or overlapping the one before, are ignored.
std::vector<JudgedPiece> JudgedPieces(std::string_view line, const std::vector<FigureMark>& marks);

// The line with its leading "[tag]" and its judged figures in color, each followed by its
// ✓ or ✗ in the same color (JudgedPieces); check_failed marks the tag as differing from the
// lesson.
std::string ColorizeLine(std::string_view line, const std::vector<FigureMark>& marks,
                         bool check_failed);

// The text without ANSI escape sequences (ESC [ ... letter) and without the " ✓" or " ✗"
// that ends a coloured figure (just before its reset): ColorizeLine's line gives back the
// plain one.
std::string StripColor(std::string_view text);

}  // namespace dedupsim
