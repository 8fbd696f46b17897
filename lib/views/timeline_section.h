// One scenario's section of the --timeline drawing: its title, its text line with the
// judged figures painted right or wrong, then each of its sub-runs (split at the "part"
// events, and at a reset that comes after steps) under its own title, with the set-up's
// resets written above its lanes, its lanes in bands, and the scale under each band.
//
// The events are put in causal order and repeated deliveries folded first (views/lanes.h),
// so the section draws what the text views say. Pure function; thread-safe.
#pragma once

#include <string>

#include "views/svg_timeline.h"

namespace dedupsim::timeline {

// What a part of the drawing adds, and how tall it is.
struct Drawn {
  std::string svg;
  double height = 0;
  bool write_lock = false;  // some lane drew a write lock's hold (SQLite's; none on a server)
};

// The section drawn from height `top` down.
Drawn DrawSection(const TimelineSection& section, double top);

}  // namespace dedupsim::timeline
