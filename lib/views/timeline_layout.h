// Where each step of one sub-run goes on the --timeline drawing, and the scale under it.
//
// The axis is time where the sub-run waited for a lock, two consumers acted at once (one
// stepped between the other's first and last steps), or the scenario waited out a real
// broker's clock (a "waited" event: that wait is real time, drawn as such), else its steps in order however long
// they took, so the same events draw the same picture on any machine; a sub-run driven by
// a simulated clock is
// always drawn by its steps, with the days written in. Every distinct stamp gets an x, left
// to right in the order things happened: on a time axis where its time puts it, on one scale
// for the whole sub-run (equal durations are drawn at equal lengths, in every band), a card
// that would cover the one before it on its lane moved right of it with a bent leader; on a
// step axis one step after the last and no earlier than the end of the card before it on
// its own lane. So the cards of a lane stand side by side and nothing needs a second row.
// What does not fit the plot's width goes on in a band below (as a long line of text
// would), whole cards at a time, on the same scale.
//
// A band holds the time from its first stamp up to the next band's first stamp (the last
// band: to the end), never a stretch twice. Anything drawn from one time to another (a
// transaction, a wait) is drawn in the band where it starts, ending where it truly ends when
// that is inside the band; what goes on past a band's end is drawn to that end, marked as
// continuing, and resumes at the next band's start, marked as continued (Band::Where).
//
// Pure functions of the lanes and events; thread-safe. A PartLayout points into the events
// it was laid out from (its clocks): they must outlive it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace/trace.h"
#include "views/lanes.h"

namespace dedupsim::timeline {

// A card: a lane's steps that belong together (a delivery, or what a lane did at one time),
// one line each, hung below the lane's bars from where its first step happened.
struct CardLine {
  std::string text;
  std::string css;  // "step", "right", "wrong", "failed", "head"
};
struct Card {
  size_t lane = 0;
  size_t first = 0;  // the stamp of its first step (an index into Layout::stamps)
  std::vector<CardLine> lines;
  double width = 0;
  double left = 0;  // where it starts: at its first step, or earlier to end at the plot's edge
  double height() const;
};

// Each stamp's x and band (see the file's comment).
struct Layout {
  bool time_axis = false;
  std::vector<int64_t> stamps;  // distinct, sorted
  std::vector<double> x;        // per stamp, within its band
  std::vector<int> band;        // per stamp
  int bands = 1;
  // A time axis: x = kPlotLeft + (us - lo_us) * per_us - shift[band].
  int64_t lo_us = 0;
  double per_us = 0;
  std::vector<double> shift;  // per band
  // The first stamp at or after `us` (the last stamp if none is).
  size_t Index(int64_t us) const;
  // The x of a time inside band b's range: on a time axis where its time puts it; on a
  // step axis its stamp's (the first at or after it; the band's right end past its stamps).
  double XAt(int64_t us, int b) const;
};

// One sub-run laid out: its stamps, its cards placed, and what its axis is written from.
struct PartLayout {
  Layout layout;
  std::vector<Card> cards;
  std::vector<const TraceEvent*> clocks;  // the simulated clock's settings, in order
  int64_t span_us = 0;                    // from the lanes' first step to their last end
};

// Lays out the lanes built from `events` (not empty).
PartLayout LayOutPart(const std::vector<Lane>& lanes, const std::vector<TraceEvent>& events);

// Where something from one time to another is drawn in a band: from x0 to x1; before: it
// began in an earlier band (x0 is the band's start); after: it goes on in a later band (x1
// is the band's end).
struct Reach {
  double x0 = 0;
  double x1 = 0;
  bool before = false;
  bool after = false;
};

// One band: its stamps, first and last (-1, -1 for a band without stamps), and the time it
// holds, from from_us (its first stamp) up to to_us (the next band's first stamp; the last
// band: INT64_MAX), drawn from kPlotLeft to end_x (a time axis: where to_us would be; a
// step axis, or the last band: kPlotRight).
struct Band {
  int index = 0;
  int64_t lo_us = -1;
  int64_t hi_us = -1;
  int64_t from_us = 0;
  int64_t to_us = 0;
  double end_x = 0;
  bool last = true;
  // Whether something from `from` to `to` shows in this band (it starts in the band's time,
  // or began before it and goes on into it), and where; none when it does not.
  std::optional<Reach> Where(const Layout& layout, int64_t from, int64_t to) const;
};
Band BandOf(const Layout& layout, int b);

// The scale of band `band`, under its lanes (which run from lanes_top to y): the grid
// lines across the lanes, and the axis with its ticks and caption. Tick labels that would
// overlap the caption or the label before them are left out.
struct Axis {
  std::string grid;
  std::string axis;
};
Axis DrawAxis(const PartLayout& part, const Band& band, double lanes_top, double y);

}  // namespace dedupsim::timeline
