// Where each step of one sub-run goes on the --timeline drawing, and the scale under it.
//
// The axis is time where the sub-run waited for a lock or two consumers acted at once (one
// stepped between the other's first and last steps), else its steps in order however long
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
// Pure functions of the lanes and events; thread-safe. A PartLayout points into the events
// it was laid out from (its clocks): they must outlive it.
#pragma once

#include <cstddef>
#include <cstdint>
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
  // The first stamp at or after `us` (the last stamp if none is).
  size_t Index(int64_t us) const;
  // Where a time falls in band b: its stamp's x there, or just past an end of the band.
  double XIn(int64_t us, int b) const;
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

// The stamps of one band, first and last (-1, -1 for a band without stamps).
struct Band {
  int index = 0;
  int64_t lo_us = -1;
  int64_t hi_us = -1;
  // Whether something from `from` to `to` shows in this band.
  bool Holds(int64_t from, int64_t to) const { return to >= lo_us && from <= hi_us; }
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
