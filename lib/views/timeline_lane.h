// One lane of the --timeline drawing in one band: the actor's name (and its second line),
// a bar per transaction from BEGIN to its end (committed, rolled back, died inside, or
// still open), a short bar per autocommit statement, lock waits hatched with what they
// waited for, a glyph per mark (crash, death seen, hook, delivery, outcome, ack, email,
// recovery, broker step), and the lane's cards hung under its bars on leader lines.
//
// Only draws: what a bar, mark or card says was decided by the lanes (views/lanes.h) and
// the layout (views/timeline_layout.h). Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "views/lanes.h"
#include "views/timeline_layout.h"

namespace dedupsim::timeline {

// One marker glyph centred on x, on the bar row whose top is y; "" for a mark that has no
// glyph (a failure, a wait, other steps: their cards say them).
std::string Glyph(const Mark& mark, double x, double y);

// Whether lane `lane` of the part has a step, a span or a wait in `band`.
bool LaneInBand(const Lane& lane, const Layout& layout, const Band& band);

// Lane `index` of the part drawn in `band` from height `top` down. shaded: its background
// is drawn (every other lane, and every secondary one).
struct LaneDrawing {
  std::string background;  // "" unless shaded
  std::string body;        // the name, bars, marks and cards, as one group
  double height = 0;       // at least 84 px, and room for its tallest card
  bool write_lock = false; // a write lock's hold drawn (the legend keys it only then)
};
LaneDrawing DrawLane(const Lane& lane, size_t index, const PartLayout& part, const Band& band,
                     double top, bool shaded);

}  // namespace dedupsim::timeline
