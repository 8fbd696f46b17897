#include "views/timeline_section.h"

#include <fmt/format.h>

#include <vector>

#include "views/event_text.h"
#include "views/lanes.h"
#include "views/step_text.h"
#include "views/timeline_lane.h"
#include "views/timeline_layout.h"
#include "views/timeline_text.h"

namespace dedupsim::timeline {

namespace {

// The events of one sub-run: those after its "part" event, up to the next.
struct Part {
  std::string title;  // "" before the first titled one
  std::vector<TraceEvent> events;
};

// A reset in the middle of a sub-run (after steps of its lanes) begins a block of its own:
// what comes after it starts from the tables it left.
std::vector<Part> SplitParts(const std::vector<TraceEvent>& events) {
  std::vector<Part> parts(1);
  bool stepped = false;  // the current part has steps of a lane
  for (const TraceEvent& e : events) {
    if (e.kind == "part") {
      if (!parts.back().events.empty() || !parts.back().title.empty()) parts.emplace_back();
      parts.back().title = e.detail;
      stepped = false;
      continue;
    }
    if (e.kind == "reset" && stepped) {
      const std::string title = parts.back().title;
      parts.emplace_back();
      parts.back().title = title.empty() ? "after a reset" : title + ", after a reset";
      stepped = false;
    }
    stepped |= !LaneKey(e).empty();
    parts.back().events.push_back(e);
  }
  if (parts.size() > 1 && parts.front().title.empty() && parts.front().events.empty()) {
    parts.erase(parts.begin());
  }
  return parts;
}

// The lanes of one laid-out sub-run, band after band, each band's scale under it.
// write_lock: set when a lane drew a write lock's hold.
double DrawBands(const std::vector<Lane>& lanes, const PartLayout& part, double y, std::string& s,
                 bool& write_lock) {
  for (int b = 0; b < part.layout.bands; ++b) {
    if (b > 0) y += 10;
    const double lanes_top = y;
    const Band band = BandOf(part.layout, b);
    std::string backgrounds, body;
    size_t drawn = 0;
    for (size_t li = 0; li < lanes.size(); ++li) {
      const Lane& lane = lanes[li];
      if (!LaneInBand(lane, part.layout, band)) continue;
      LaneDrawing d = DrawLane(lane, li, part, band, y, drawn % 2 == 0 || lane.secondary);
      ++drawn;
      write_lock |= d.write_lock;
      backgrounds += d.background;
      body += d.body;
      y += d.height;
    }
    const Axis axis = DrawAxis(part, band, lanes_top, y);
    s += backgrounds + axis.grid + body + axis.axis;
    y += 40;
  }
  return y;
}

Drawn DrawPart(const Part& part, ShortIds& ids, double top) {
  Drawn out;
  double y = top;
  std::string& s = out.svg;
  if (!part.title.empty()) {
    s += fmt::format("<text class=\"part-title\" x=\"{}\" y=\"{}\">▸ {}</text>\n", Num(kMargin),
                     Num(y + 22), Escape(part.title));
    y += 32;
  }
  // The set-up's resets, as titled steps of the sub-run: what the tables were reset to; and
  // a real-time wait the scenario measured (a real broker's clock), said as the diagram and
  // the page say it, its span being the axis's gap.
  for (size_t k = 0; k < part.events.size(); ++k) {
    const TraceEvent& e = part.events[k];
    if (e.kind != "reset" && e.kind != "waited") continue;
    std::string words = DescribeStep(e, ids, kPictureWords).Text();
    if (e.kind == "waited") {
      // Written above the lanes, it says where it falls among them: after the step drawn
      // before it (the gap on the axis), never read as before that step (eleventh
      // walkthrough: "the producer waited" stood above the send it followed).
      for (size_t p = k; p-- > 0;) {
        if (LaneKey(part.events[p]).empty()) continue;
        words += ", after " + DescribeStep(part.events[p], ids, kPictureWords).what +
                 ": the gap on the axis below";
        break;
      }
    }
    for (const std::string& line : Wrap(e.kind == "reset" ? "set-up: " + words : words, 170)) {
      s += fmt::format("<text class=\"reset\" x=\"{}\" y=\"{}\">{}</text>\n", Num(kMargin + 20),
                       Num(y + 17), Escape(line));
      y += kLine;
    }
  }
  const std::vector<Lane> lanes = BuildLanes(part.events, ids, kPictureWords);
  if (lanes.empty()) {
    if (part.title.empty() && y == top) {
      s += fmt::format("<text class=\"note\" x=\"{}\" y=\"{}\">no steps were recorded</text>\n",
                       Num(kPlotLeft), Num(y + 18));
      y += 30;
    }
    out.height = y - top;
    return out;
  }
  const PartLayout layout = LayOutPart(lanes, part.events);
  y = DrawBands(lanes, layout, y, s, out.write_lock);
  out.height = y - top;
  return out;
}

}  // namespace

Drawn DrawSection(const TimelineSection& section, double top) {
  Drawn out;
  double y = top;
  std::string& s = out.svg;
  s += fmt::format("<text class=\"section\" x=\"{}\" y=\"{}\">{}</text>\n", Num(kMargin),
                   Num(y + 26), Escape(section.scenario));
  y += 36;
  // The line with its final figures, right and wrong painted as on the terminal.
  const size_t chars = static_cast<size_t>((kWidth - 2 * kMargin) / (0.61 * 18));
  for (const std::vector<Run>& runs : WrapLine(section.line, section.marks, chars)) {
    s += fmt::format("<text class=\"line\" xml:space=\"preserve\" x=\"{}\" y=\"{}\">", Num(kMargin),
                     Num(y + 18));
    for (const Run& r : runs) {
      s += fmt::format("<tspan class=\"{}\">{}</tspan>", r.css, Escape(r.text));
    }
    s += "</text>\n";
    y += 26;
  }
  y += 8;
  std::vector<TraceEvent> events = CausalOrder(section.events);
  ShortIds ids(events);
  events = FoldRepeatedDeliveries(events, ids);
  const std::vector<Part> parts = SplitParts(events);
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) {
      // Between two sub-runs: a rule across, under every label of the one before.
      s += fmt::format("<line class=\"divider\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n",
                       Num(kMargin), Num(y + 6), Num(kWidth - kMargin), Num(y + 6));
      y += 14;
    }
    Drawn part = DrawPart(parts[i], ids, y);
    s += part.svg;
    y += part.height;
    out.write_lock |= part.write_lock;
  }
  out.height = y - top;
  return out;
}

}  // namespace dedupsim::timeline
