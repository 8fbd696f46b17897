#include "views/timeline_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>

#include "views/timeline_text.h"

namespace dedupsim::timeline {

namespace {

// A step of 1, 2 or 5 times a power of ten, giving about `count` ticks over span_ms.
double NiceStep(double span_ms, int count) {
  double raw = span_ms / count;
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

std::string FormatMs(double ms, double step) {
  if (std::abs(ms) < step / 1000) ms = 0;  // no "-0 ms"
  if (step >= 1) return fmt::format("{:.0f} ms", ms);
  if (step >= 0.1) return fmt::format("{:.1f} ms", ms);
  return fmt::format("{:.2f} ms", ms);
}

const char* StepCss(const LaneStep& s) {
  if (s.delivery) return "head";
  if (s.tone == Tone::kRight) return "right";
  if (s.tone == Tone::kWrong) return "wrong";
  if (s.failed) return "failed";
  return "step";
}

// The cards of each lane: a new card at each delivery, after a wait (the statement that
// waited goes on later), after a pause (a time axis: a gap of gap_us; a step axis: another
// lane acted in between), after another lane's step (in the events' order, on either axis:
// a card never holds two steps with another actor's turn between them, even at one stamp),
// and at kCardSteps steps. owner: per stamp, the lane that acted there (-1: several, or
// none).
std::vector<Card> MakeCards(const std::vector<Lane>& lanes, const Layout& layout,
                            const std::vector<int>& owner, int64_t gap_us) {
  std::vector<Card> cards;
  // Per event (by index), the lane whose step was said at it (-1: none; -2: several, as a
  // call to the email provider, asked on its caller's lane and answered on the provider's).
  std::vector<int> said_by;
  for (size_t li = 0; li < lanes.size(); ++li) {
    for (const LaneStep& s : lanes[li].steps) {
      if (said_by.size() <= s.event) said_by.resize(s.event + 1, -1);
      int& by = said_by[s.event];
      by = by == -1 || by == static_cast<int>(li) ? static_cast<int>(li) : -2;
    }
  }
  for (size_t li = 0; li < lanes.size(); ++li) {
    std::optional<size_t> last_event;
    std::optional<size_t> last;
    bool after_request = false;  // the last step asked the email provider
    bool after_wait = false;
    size_t steps_in_card = 0;
    for (const LaneStep& s : lanes[li].steps) {
      const size_t at = layout.Index(s.at_us);
      bool pause = false;
      if (last) {
        // A request is said at the provider's first step for it, which comes after it: that
        // step is between the request and this one (fourteenth walkthrough: the operator's
        // Find asked and answered on one card around the provider's SELECT).
        for (size_t i = after_request ? *last_event : *last_event + 1; i < s.event && !pause;
             ++i) {
          pause = said_by[i] != -1 && said_by[i] != static_cast<int>(li);
        }
        if (!pause && layout.time_axis) {
          pause = s.at_us - layout.stamps[*last] > gap_us;
        } else if (!pause) {
          for (size_t k = *last + 1; k < at && !pause; ++k) {
            pause = owner[k] != static_cast<int>(li);
          }
        }
      }
      if (!last || s.delivery || pause || after_wait || steps_in_card >= kCardSteps) {
        cards.push_back(Card{li, at, {}, 0, 0});
        steps_in_card = 0;
      }
      const std::string text = s.text + ToneMark(s.tone);
      for (const std::string& part : Wrap(text, kCardChars)) {
        cards.back().lines.push_back({part, StepCss(s)});
      }
      steps_in_card++;
      last = at;
      last_event = s.event;
      after_request = s.kind == "request";
      after_wait = s.wait;
    }
  }
  for (Card& c : cards) {
    double widest = 0;
    for (const CardLine& l : c.lines) widest = std::max(widest, TextWidth(l.text));
    c.width = widest + 2 * kCardPad;
  }
  return cards;
}

// Fills layout.x and layout.band (see Layout). base: each stamp's x on a time axis as if
// the plot were endless (kPlotLeft at the first); unused on a step axis.
void PlaceStamps(Layout& layout, const std::vector<double>& base, std::vector<Card>& cards,
                 size_t lanes) {
  constexpr double kStep = 18;     // a step axis: the least room between two stamps
  constexpr double kCardGap = 16;  // between two cards of one lane
  const size_t n = layout.stamps.size();
  layout.x.assign(n, kPlotLeft);
  layout.band.assign(n, 0);
  std::vector<std::vector<Card*>> starting(n);
  for (Card& c : cards) starting[c.first].push_back(&c);
  std::vector<double> lane_free(lanes, kPlotLeft);
  int band = 0;
  size_t band_start = 0;
  layout.shift.assign(1, 0);  // a time axis: base minus this is the x within the band
  // x for stamp k, and whether every card starting there fits. On a time axis x is the
  // time's, never moved for a card (equal durations are equal lengths); a card starts at its
  // step or, when the card before it on its lane is still there, just after that one (its
  // leader bends to it). On a step axis x moves on past the cards before it on the lanes
  // of the cards starting there. Near the plot's end a card ends at the edge, its step above
  // it; never over the card before it on its lane.
  auto place = [&](size_t k) {
    double x = k == band_start ? kPlotLeft : layout.x[k - 1] + (layout.time_axis ? 0 : kStep);
    if (layout.time_axis) {
      x = base[k] - layout.shift.back();
    } else {
      for (const Card* c : starting[k]) x = std::max(x, lane_free[c->lane]);
    }
    bool fits = x <= kPlotRight;
    for (const Card* c : starting[k]) {
      fits = fits && std::min(std::max(x, lane_free[c->lane]), kPlotRight - c->width) >=
                         lane_free[c->lane];
    }
    return std::make_pair(x, fits);
  };
  for (size_t k = 0; k < n; ++k) {
    auto [x, fits] = place(k);
    if (!fits && k > band_start) {
      ++band;  // what starts here goes on in the next band
      band_start = k;
      layout.shift.push_back(layout.time_axis ? base[k] - kPlotLeft : 0);
      std::fill(lane_free.begin(), lane_free.end(), kPlotLeft);
      std::tie(x, fits) = place(k);
    }
    layout.x[k] = x;
    layout.band[k] = band;
    for (Card* c : starting[k]) {
      const double after = std::max(x, lane_free[c->lane]);  // its step, or the card before
      c->left = std::max(kPlotLeft, std::min(after, kPlotRight - c->width));
      lane_free[c->lane] = c->left + c->width + kCardGap;
    }
  }
  layout.bands = band + 1;
}

}  // namespace

double Card::height() const { return static_cast<double>(lines.size()) * kLine + 8; }

size_t Layout::Index(int64_t us) const {
  auto it = std::lower_bound(stamps.begin(), stamps.end(), us);
  if (it == stamps.end()) return stamps.empty() ? 0 : stamps.size() - 1;
  return static_cast<size_t>(it - stamps.begin());
}

double Layout::XAt(int64_t us, int b) const {
  if (time_axis) {
    return kPlotLeft + static_cast<double>(us - lo_us) * per_us - shift[static_cast<size_t>(b)];
  }
  const size_t k = Index(us);
  return band[k] == b ? x[k] : kPlotRight;
}

std::optional<Reach> Band::Where(const Layout& layout, int64_t from, int64_t to) const {
  Reach r;
  r.before = from < from_us;
  // On a time axis a thing that ends at the next band's first stamp ends at this band's end;
  // on a step axis that stamp, its end, is drawn in the next band.
  r.after = !last && (layout.time_axis ? to > to_us : to >= to_us);
  const bool starts_here = !r.before && from < to_us;
  const bool goes_on_here = r.before && (layout.time_axis ? to > from_us : to >= from_us);
  if (!starts_here && !goes_on_here) return std::nullopt;
  r.x0 = r.before ? kPlotLeft : layout.XAt(from, index);
  r.x1 = r.after ? end_x : std::min(layout.XAt(to, index), end_x);
  return r;
}

PartLayout LayOutPart(const std::vector<Lane>& lanes, const std::vector<TraceEvent>& events) {
  PartLayout part;
  Layout& layout = part.layout;
  int64_t lo = lanes.front().first_us, hi = lanes.front().last_us;
  bool waited = false;
  // Two consumer instances at once: one acted between the other's first and last steps (by
  // the order of their steps, not by how long they took).
  bool at_once = false;
  for (const Lane& a : lanes) {
    for (const Lane& b : lanes) {
      at_once |= a.actor == kActorConsumer && b.actor == kActorConsumer &&
                 a.instance != b.instance && a.first_us < b.first_us && b.first_us < a.last_us;
    }
  }
  for (const Lane& lane : lanes) {
    lo = std::min(lo, lane.first_us);
    hi = std::max(hi, lane.last_us);
    for (const Span& span : lane.spans) hi = std::max(hi, span.end_us);
    waited |= !lane.waits.empty();
  }
  bool real_wait = false;  // the scenario waited in real time for a real broker's clock
  for (const TraceEvent& e : events) {
    if (e.kind == "clock") part.clocks.push_back(&e);
    real_wait |= e.kind == "waited";
    if (!LaneKey(e).empty() || e.kind == "clock") layout.stamps.push_back(e.at_us);
  }
  for (const Lane& lane : lanes) {
    for (const LockWait& w : lane.waits) layout.stamps.push_back(w.start_us);
  }
  std::sort(layout.stamps.begin(), layout.stamps.end());
  layout.stamps.erase(std::unique(layout.stamps.begin(), layout.stamps.end()), layout.stamps.end());
  part.span_us = hi - lo;
  layout.time_axis = part.clocks.empty() && (waited || at_once || real_wait);
  // Who acted at each stamp: a lane's card goes on while no other lane acted in between.
  std::vector<int> owner(layout.stamps.size(), -2);
  for (size_t li = 0; li < lanes.size(); ++li) {
    auto own = [&](int64_t us) {
      int& o = owner[layout.Index(us)];
      o = o == -2 || o == static_cast<int>(li) ? static_cast<int>(li) : -1;
    };
    for (const LaneStep& step : lanes[li].steps) own(step.at_us);
    // A lock's take and release are its lane's, said with their statements: no pause.
    for (const LockHeld& held : lanes[li].held) {
      own(held.start_us);
      own(held.end_us);
    }
  }
  const int64_t gap_us = std::max<int64_t>(2000, part.span_us / 16);
  part.cards = MakeCards(lanes, layout, owner, gap_us);
  std::vector<double> base(layout.stamps.size(), kPlotLeft);
  layout.lo_us = lo;
  layout.per_us =
      (kPlotRight - kPlotLeft - 40) / std::max<double>(static_cast<double>(part.span_us), 1000.0);
  for (size_t k = 0; k < layout.stamps.size(); ++k) {
    base[k] = kPlotLeft + static_cast<double>(layout.stamps[k] - lo) * layout.per_us;
  }
  PlaceStamps(layout, base, part.cards, lanes.size());
  return part;
}

Band BandOf(const Layout& layout, int b) {
  Band band;
  band.index = b;
  for (size_t k = 0; k < layout.stamps.size(); ++k) {
    if (layout.band[k] != b) continue;
    if (band.lo_us < 0) band.lo_us = layout.stamps[k];
    band.hi_us = layout.stamps[k];
  }
  band.from_us = b == 0 || band.lo_us < 0 ? std::numeric_limits<int64_t>::min() : band.lo_us;
  band.to_us = std::numeric_limits<int64_t>::max();
  band.end_x = kPlotRight;
  band.last = b + 1 >= layout.bands;
  if (!band.last) {
    // The next band's first stamp.
    band.to_us = layout.stamps[static_cast<size_t>(
        std::find(layout.band.begin(), layout.band.end(), b + 1) - layout.band.begin())];
    if (layout.time_axis) {
      band.end_x = std::clamp(layout.XAt(band.to_us, b), kPlotLeft, kPlotRight);
    }
  }
  return band;
}

Axis DrawAxis(const PartLayout& part, const Band& band, double lanes_top, double y) {
  const Layout& layout = part.layout;
  const int b = band.index;
  Axis out;
  std::string& grid = out.grid;
  std::string& axis = out.axis;
  axis = fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n",
                     Num(kPlotLeft), Num(y + 4), Num(band.end_x), Num(y + 4));
  std::string caption;
  if (!layout.time_axis) {
    caption = part.clocks.empty() ? fmt::format("steps in order ({:.1f} ms)",
                                                static_cast<double>(part.span_us) / 1000.0)
                                  : std::string("steps (simulated clock)");
  } else {
    caption = "ms since the run began";
  }
  // A continued band's caption is short: its first ticks stand at the plot's left edge (a
  // simulated clock's "day 6" there was left out for reaching into the caption's room).
  if (b > 0) {
    caption = layout.time_axis     ? "ms, continued"
              : part.clocks.empty() ? caption + " (continued)"
                                    : "clock, continued";
  }
  double free_from = std::max(kPlotLeft - 40, kMargin + TextWidth(caption, 16) + 14);
  // A label is centred on its tick, or, from_x, starts at it (a continued band's first tick
  // stands at the plot's left edge: centred, a long time such as "1101.20 ms" would reach
  // into the caption's room and be left out).
  auto tick = [&](double x, const std::string& label, bool from_x = false) {
    grid += fmt::format("<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n",
                        Num(x), Num(lanes_top), Num(y + 4));
    axis += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n",
                        Num(x), Num(y + 4), Num(y + 11));
    const double w = TextWidth(label, 16);
    const double left = from_x ? x : x - w / 2;
    if (left >= free_from && left + w <= kWidth - 8) {
      axis += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\"{}>{}</text>\n", Num(x),
                          Num(y + 28), from_x ? " style=\"text-anchor: start\"" : "",
                          Escape(label));
      free_from = left + w + 14;
    }
  };
  if (!layout.time_axis) {
    for (const TraceEvent* c : part.clocks) {
      const size_t k = layout.Index(c->at_us);
      if (layout.band[k] == b) tick(layout.x[k], c->detail);
    }
  } else {
    // Times between two stamps are placed between their x, in proportion; one step for
    // every band of the sub-run, on its one scale.
    const double step =
        NiceStep(static_cast<double>(std::max<int64_t>(part.span_us, 1000)) / 1000.0, 7);
    // A continued band says where it starts in time, however short it is: to a tenth of the
    // other ticks' precision, since its tick stands at that time, not at a round one
    // ("21 ms" at 20.55 ms put a COMMIT half a millisecond late on a band of 123 px per ms).
    if (b > 0) {
      const double lo_ms = static_cast<double>(band.lo_us) / 1000.0;
      tick(layout.x[layout.Index(band.lo_us)], FormatMs(lo_ms, std::min(step, 1.0) / 10), true);
    }
    // Ticks over the band's time: to its last stamp, or up to the next band's start.
    for (double t = std::ceil(static_cast<double>(band.lo_us) / 1000.0 / step) * step;; t += step) {
      const auto us = static_cast<int64_t>(std::llround(t * 1000.0));
      if (band.last ? us > band.hi_us : us >= band.to_us) break;
      tick(layout.XAt(us, b), FormatMs(t, step));
    }
    // Where a band's time ends short of the plot's right edge (its cards go on): a line
    // across its lanes, the axis ending there.
    if (!band.last && band.end_x < kPlotRight) {
      grid += fmt::format(
          "<line class=\"band-end\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n",
          Num(band.end_x), Num(lanes_top), Num(y + 11));
    }
  }
  axis += fmt::format("<text class=\"caption\" x=\"{}\" y=\"{}\">{}</text>\n", Num(kMargin),
                      Num(y + 28), Escape(caption));
  return out;
}

}  // namespace dedupsim::timeline
