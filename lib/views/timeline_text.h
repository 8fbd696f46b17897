// The timeline's page and its text: the measures every part of the --timeline drawing
// shares (a 1920 px wide page, every label 17 px, the plot between the lanes' names and the
// right margin), and the SVG writer's small tools: XML escaping, numbers as the drawing
// writes them, the width a label takes, and wrapping text into lines that fit.
//
// Widths are counted, not measured: DejaVu Sans Mono's advance is 0.602 em, so a label's
// width is its glyph count times 0.61 of its font size (docs/pictures.md).
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lesson/scenario.h"

namespace dedupsim::timeline {

// A 1920 x 1080 screen, every label at least 16 px there: the drawing is 1920 wide and is
// meant to be shown at its own size (docs/pictures.md).
constexpr double kWidth = 1920;
constexpr double kMargin = 24;
constexpr double kTitleColumn = 250;  // the lanes' names
constexpr double kPlotLeft = kMargin + kTitleColumn;
constexpr double kPlotRight = kWidth - kMargin - 8;
constexpr double kFont = 17;  // every label
constexpr double kLine = 23;  // a line of text
constexpr double kBarTop = 12;
constexpr double kBarHeight = 26;
constexpr double kHeldHeight = 7;  // the stripe of a write lock held, at a bar's foot
constexpr double kMinHeld = 4;     // its least width
constexpr double kCardPad = 7;
constexpr size_t kCardChars = 48;  // a card's lines are wrapped at this many characters
constexpr size_t kCardSteps = 12;  // and a card holds at most this many steps
// A lane's name is bold 20 px sans (about 0.72 em a glyph, wider than the labels' mono):
// wrapped at this many characters it ends clear of the marks at the plot's left edge.
constexpr size_t kLaneTitleChars = 16;
constexpr double kAutocommitBar = 10;
constexpr double kMinBar = 6;

// `text` with & < > " ' written as XML entities: safe in an element or an attribute.
std::string Escape(std::string_view text);

// A coordinate as the drawing writes it: one decimal ("12.0").
std::string Num(double v);

// Characters as they are counted on screen: a UTF-8 sequence ("✓", "→") is one.
size_t Glyphs(std::string_view text);

// The width `text` takes at `font` px.
double TextWidth(std::string_view text, double font = kFont);

// Wrapped at spaces into lines of at most `chars` characters (a longer word stays whole),
// never between a figure and its unit ("398 ms" stays on one line). Never empty: "" gives
// one empty line.
std::vector<std::string> Wrap(const std::string& text, size_t chars);

// A piece of a line in one colour (a CSS class of the drawing's style).
struct Run {
  std::string text;
  std::string css;
};

// The scenario's line with its judged figures painted as on the terminal ("line right",
// "line wrong", else "line"), each with its ✓ or ✗ (JudgedPieces), broken at a space at most `chars` in, its own spacing kept.
// Never empty: an empty line gives one line of no runs.
std::vector<std::vector<Run>> WrapLine(const std::string& line,
                                       const std::vector<FigureMark>& marks, size_t chars);

}  // namespace dedupsim::timeline
