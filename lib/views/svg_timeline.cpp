#include "views/svg_timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <optional>

#include "views/event_text.h"
#include "views/lanes.h"
#include "views/step_text.h"

namespace dedupsim {

namespace {

// A 1920 x 1080 screen, every label at least 16 px there: the drawing is 1920 wide and is
// meant to be shown at its own size (docs/pictures.md).
constexpr double kWidth = 1920;
constexpr double kMargin = 24;
constexpr double kTitleColumn = 250;  // the lanes' names
constexpr double kPlotLeft = kMargin + kTitleColumn;
constexpr double kPlotRight = kWidth - kMargin - 8;
constexpr double kFont = 17;                 // every label
constexpr double kCharWidth = 0.61 * kFont;  // DejaVu Sans Mono's advance is 0.602 em
constexpr double kLine = 23;                 // a line of text
constexpr double kBarTop = 12;
constexpr double kBarHeight = 26;
constexpr double kCardPad = 7;
constexpr size_t kCardChars = 48;  // a card's lines are wrapped at this many characters
constexpr size_t kCardSteps = 12;  // and a card holds at most this many steps
constexpr double kAutocommitBar = 10;
constexpr double kMinBar = 6;
// A sub-run shorter than this, with no lock wait, is drawn against its steps in order: its
// times are a few fractions of a millisecond apart and say nothing a class needs.
constexpr int64_t kTimeAxisFromUs = 20000;

std::string Escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Num(double v) { return fmt::format("{:.1f}", v); }

// Characters as they are counted on screen: a UTF-8 sequence ("✓", "→") is one.
size_t Glyphs(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

double TextWidth(std::string_view text, double font = kFont) {
  return static_cast<double>(Glyphs(text)) * 0.61 * font;
}

// "130.3" or "(4096": a figure whose unit may follow.
bool IsFigure(std::string_view word) {
  if (!word.empty() && word.front() == '(') word.remove_prefix(1);
  return !word.empty() && std::isdigit(static_cast<unsigned char>(word.front())) &&
         std::all_of(word.begin(), word.end(), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
         });
}

// "ms", "bytes" or "ms)," : a unit, whatever punctuation follows it.
bool IsUnit(std::string_view word) {
  word = word.substr(0, word.find_first_of(",;:)"));
  return word == "ms" || word == "bytes" || word == "rows" || word == "row";
}

// Wrapped at spaces into lines of at most `chars` characters (a longer word stays whole),
// never between a figure and its unit ("398 ms" stays on one line).
std::vector<std::string> Wrap(const std::string& text, size_t chars) {
  std::vector<std::string> lines;
  std::string line;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    if (end < text.size() && IsFigure(std::string_view(text).substr(start, end - start))) {
      size_t unit_end = text.find(' ', end + 1);
      if (unit_end == std::string::npos) unit_end = text.size();
      if (IsUnit(std::string_view(text).substr(end + 1, unit_end - end - 1))) end = unit_end;
    }
    std::string word = text.substr(start, end - start);
    if (!line.empty() && Glyphs(line) + 1 + Glyphs(word) > chars) {
      lines.push_back(line);
      line.clear();
    }
    if (!line.empty()) line += ' ';
    line += word;
    start = end + 1;
  }
  if (!line.empty() || lines.empty()) lines.push_back(line);
  return lines;
}

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
  double height() const { return static_cast<double>(lines.size()) * kLine + 8; }
};

const char* StepCss(const LaneStep& s) {
  if (s.delivery) return "head";
  if (s.tone == Tone::kRight) return "right";
  if (s.tone == Tone::kWrong) return "wrong";
  if (s.failed) return "failed";
  return "step";
}

// Where each step of a sub-run goes. Every distinct stamp gets an x, left to right in the
// order they happened: on a time axis no earlier than its time puts it, on a step axis one
// step after the last; and no earlier than the end of the card before it on its own lane,
// so the cards of a lane stand side by side and nothing needs a second row. What does not
// fit the plot's width goes on in a band below (as a long line of text would), whole
// cards at a time.
struct Layout {
  bool time_axis = false;
  std::vector<int64_t> stamps;  // distinct, sorted
  std::vector<double> x;        // per stamp, within its band
  std::vector<int> band;        // per stamp
  int bands = 1;
  size_t Index(int64_t us) const {
    auto it = std::lower_bound(stamps.begin(), stamps.end(), us);
    if (it == stamps.end()) return stamps.empty() ? 0 : stamps.size() - 1;
    return static_cast<size_t>(it - stamps.begin());
  }
};

// The cards of each lane: a new card at each delivery, after a wait (the statement that
// waited goes on later), after a pause (a time axis: a gap of gap_us; a step axis: another
// lane acted in between), and at kCardSteps steps. owner: per stamp, the lane that acted
// there (-1: several, or none).
std::vector<Card> MakeCards(const std::vector<Lane>& lanes, const Layout& layout,
                            const std::vector<int>& owner, int64_t gap_us) {
  std::vector<Card> cards;
  for (size_t li = 0; li < lanes.size(); ++li) {
    std::optional<size_t> last;
    bool after_wait = false;
    size_t steps_in_card = 0;
    for (const LaneStep& s : lanes[li].steps) {
      const size_t at = layout.Index(s.at_us);
      bool pause = false;
      if (last) {
        if (layout.time_axis) {
          pause = s.at_us - layout.stamps[*last] > gap_us;
        } else {
          for (size_t k = *last + 1; k < at && !pause; ++k) {
            pause = owner[k] != static_cast<int>(li);
          }
        }
      }
      if (!last || s.delivery || pause || after_wait || steps_in_card >= kCardSteps) {
        cards.push_back(Card{li, at, {}, 0, 0});
        steps_in_card = 0;
      }
      std::string text = s.text;
      if (s.tone == Tone::kRight) text += " ✓";
      if (s.tone == Tone::kWrong) text += " ✗";
      for (const std::string& part : Wrap(text, kCardChars)) {
        cards.back().lines.push_back({part, StepCss(s)});
      }
      steps_in_card++;
      last = at;
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
  double shift = 0;  // a time axis: base minus this is the x within the band
  // x for stamp k, and whether every card starting there fits: a card starts at its step,
  // or, near the plot's end, ends at the edge with its step above it, never over the card
  // before it on its lane.
  auto place = [&](size_t k) {
    double x = k == band_start ? kPlotLeft : layout.x[k - 1] + (layout.time_axis ? 0 : kStep);
    if (layout.time_axis) x = std::max(x, base[k] - shift);
    for (const Card* c : starting[k]) x = std::max(x, lane_free[c->lane]);
    bool fits = x <= kPlotRight;
    for (const Card* c : starting[k]) {
      fits = fits && std::min(x, kPlotRight - c->width) >= lane_free[c->lane];
    }
    return std::make_pair(x, fits);
  };
  for (size_t k = 0; k < n; ++k) {
    auto [x, fits] = place(k);
    if (!fits && k > band_start) {
      ++band;  // what starts here goes on in the next band
      band_start = k;
      shift = layout.time_axis ? base[k] - kPlotLeft : 0;
      std::fill(lane_free.begin(), lane_free.end(), kPlotLeft);
      std::tie(x, fits) = place(k);
    }
    layout.x[k] = x;
    layout.band[k] = band;
    for (Card* c : starting[k]) {
      c->left = std::max(kPlotLeft, std::min(x, kPlotRight - c->width));
      lane_free[c->lane] = c->left + c->width + kCardGap;
    }
  }
  layout.bands = band + 1;
}

const char* SpanClass(const Span& span) {
  if (span.kind == Span::Kind::kAutocommit) return "auto";
  switch (span.end) {
    case Span::End::kCommit:
      return "commit";
    case Span::End::kRollback:
      return "rollback";
    case Span::End::kDied:
      return "died";
    default:
      return "open";
  }
}

std::string JoinSteps(const std::vector<SpanStep>& steps) {
  std::string out;
  for (const SpanStep& step : steps) {
    if (!out.empty()) out += ", ";
    out += step.statement + ": " + step.result;
  }
  return out;
}

// One marker glyph centred on x, on the bar row whose top is y.
std::string Glyph(const Mark& mark, double x, double y) {
  const double mid = y + kBarHeight / 2;
  switch (mark.kind) {
    case Mark::Kind::kCrash:
      return fmt::format("<path class=\"crash-mark\" d=\"M{0} {1} L{2} {3} M{0} {3} L{2} {1}\"/>\n",
                         Num(x - 8), Num(mid - 8), Num(x + 8), Num(mid + 8));
    case Mark::Kind::kDied:
      return fmt::format(
          "<rect class=\"died-mark\" x=\"{}\" y=\"{}\" width=\"14\" height=\"14\"/>\n", Num(x - 7),
          Num(mid - 7));
    case Mark::Kind::kHook:
      return fmt::format("<path class=\"hook-mark\" d=\"M{} {} L{} {} L{} {} Z\"/>\n", Num(x - 7),
                         Num(y - 9), Num(x + 7), Num(y - 9), Num(x), Num(y));
    case Mark::Kind::kSend:
      return fmt::format(
          "<path class=\"send-mark\" d=\"M{0} {1} L{2} {3} L{0} {4} L{5} {3} Z\"/>\n", Num(x),
          Num(mid - 9), Num(x + 9), Num(mid), Num(mid + 9), Num(x - 9));
    case Mark::Kind::kRecover:
      return fmt::format("<circle class=\"recover-mark\" cx=\"{}\" cy=\"{}\" r=\"8\"/>\n", Num(x),
                         Num(mid));
    case Mark::Kind::kDelivery:
      return fmt::format(
          "<path class=\"delivery-mark\" d=\"M{0} {1} L{0} {2} M{3} {4} L{0} {1} L{5} {4}\"/>\n",
          Num(x), Num(y - 10), Num(y + kBarHeight + 2), Num(x - 6), Num(y - 3), Num(x + 6));
    case Mark::Kind::kOutcome:
      return fmt::format(
          "<rect class=\"outcome-mark {}\" x=\"{}\" y=\"{}\" width=\"8\" height=\"{}\"/>\n",
          ToneClass(mark.tone), Num(x - 4), Num(y - 2), Num(kBarHeight + 4));
    case Mark::Kind::kSettle:
      // An arrow up, to the broker.
      return fmt::format(
          "<path class=\"settle-mark\" d=\"M{0} {1} L{0} {2} M{3} {4} L{0} {2} L{5} {4}\"/>\n",
          Num(x), Num(mid + 10), Num(mid - 10), Num(x - 6), Num(mid - 3), Num(x + 6));
    case Mark::Kind::kAckLost:
      // The ack's arrow, cut by a cross: it never reached the broker.
      return fmt::format(
          "<path class=\"acklost-mark\" d=\"M{0} {1} L{0} {2} M{3} {4} L{0} {2} L{5} {4} "
          "M{3} {6} L{5} {7} M{3} {7} L{5} {6}\"/>\n",
          Num(x), Num(mid + 11), Num(mid - 11), Num(x - 6), Num(mid - 4), Num(x + 6),
          Num(mid - 1), Num(mid + 9));
    case Mark::Kind::kBroker:
      return fmt::format("<circle class=\"broker-mark\" cx=\"{}\" cy=\"{}\" r=\"6\"/>\n", Num(x),
                         Num(mid));
    case Mark::Kind::kFailure:
    case Mark::Kind::kWait:
    case Mark::Kind::kOther:
      break;
  }
  return "";
}

// A text of runs in their own colours, wrapped: the scenario's line with its judged
// figures painted as on the terminal.
struct Run {
  std::string text;
  std::string css;
};
std::vector<std::vector<Run>> WrapLine(const std::string& line, const std::vector<FigureMark>& marks,
                                       size_t chars) {
  std::vector<std::string> css(line.size(), "line");
  for (const FigureMark& m : marks) {
    for (size_t i = m.begin; i < m.begin + m.size && i < line.size(); ++i) {
      css[i] = m.correct ? "line right" : "line wrong";
    }
  }
  std::vector<std::vector<Run>> out;
  // Broken at a space at most `chars` in (the line's own spacing, its tag column, kept).
  size_t start = 0;
  while (start < line.size()) {
    size_t end = line.size();
    if (line.size() - start > chars) {
      end = line.rfind(' ', start + chars);
      if (end == std::string::npos || end <= start) end = line.find(' ', start + chars);
      if (end == std::string::npos) end = line.size();
    }
    std::vector<Run> runs;
    for (size_t i = start; i < end; ++i) {
      if (runs.empty() || runs.back().css != css[i]) runs.push_back({"", css[i]});
      runs.back().text += line[i];
    }
    out.push_back(std::move(runs));
    start = end;
    while (start < line.size() && line[start] == ' ') ++start;
  }
  if (out.empty()) out.emplace_back();
  return out;
}

struct Out {
  std::string svg;
  double height = 0;
};

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

Out DrawPart(const Part& part, ShortIds& ids, double top) {
  Out out;
  double y = top;
  std::string& s = out.svg;
  if (!part.title.empty()) {
    s += fmt::format("<text class=\"part-title\" x=\"{}\" y=\"{}\">▸ {}</text>\n", Num(kMargin),
                     Num(y + 22), Escape(part.title));
    y += 32;
  }
  // The set-up's resets, as titled steps of the sub-run: what the tables were reset to.
  for (const TraceEvent& e : part.events) {
    if (e.kind != "reset") continue;
    for (const std::string& line : Wrap("set-up: " + DescribeStep(e, ids).Text(), 170)) {
      s += fmt::format("<text class=\"reset\" x=\"{}\" y=\"{}\">{}</text>\n", Num(kMargin + 20),
                       Num(y + 17), Escape(line));
      y += kLine;
    }
  }
  const std::vector<Lane> lanes = BuildLanes(part.events, ids);
  if (lanes.empty()) {
    if (part.title.empty() && y == top) {
      s += fmt::format("<text class=\"note\" x=\"{}\" y=\"{}\">no steps were recorded</text>\n",
                       Num(kPlotLeft), Num(y + 18));
      y += 30;
    }
    out.height = y - top;
    return out;
  }

  // The axis: time where the sub-run waited or held long enough to matter, else its steps
  // in order; a simulated clock's sub-run always by its steps, with the days written in.
  Layout layout;
  std::vector<const TraceEvent*> clocks;
  int64_t lo = lanes.front().first_us, hi = lanes.front().last_us;
  bool waited = false;
  for (const Lane& lane : lanes) {
    lo = std::min(lo, lane.first_us);
    hi = std::max(hi, lane.last_us);
    for (const Span& span : lane.spans) hi = std::max(hi, span.end_us);
    waited |= !lane.waits.empty();
  }
  for (const TraceEvent& e : part.events) {
    if (e.kind == "clock") clocks.push_back(&e);
    if (!LaneKey(e).empty() || e.kind == "clock") layout.stamps.push_back(e.at_us);
  }
  for (const Lane& lane : lanes) {
    for (const LockWait& w : lane.waits) layout.stamps.push_back(w.start_us);
  }
  std::sort(layout.stamps.begin(), layout.stamps.end());
  layout.stamps.erase(std::unique(layout.stamps.begin(), layout.stamps.end()), layout.stamps.end());
  const int64_t span_us = hi - lo;
  layout.time_axis = clocks.empty() && (span_us >= kTimeAxisFromUs || waited);
  // Who acted at each stamp: a lane's card goes on while no other lane acted in between.
  std::vector<int> owner(layout.stamps.size(), -2);
  for (size_t li = 0; li < lanes.size(); ++li) {
    for (const LaneStep& step : lanes[li].steps) {
      int& o = owner[layout.Index(step.at_us)];
      o = o == -2 || o == static_cast<int>(li) ? static_cast<int>(li) : -1;
    }
  }
  const int64_t gap_us = std::max<int64_t>(2000, span_us / 16);
  std::vector<Card> cards = MakeCards(lanes, layout, owner, gap_us);
  std::vector<double> base(layout.stamps.size(), kPlotLeft);
  const double per_us = (kPlotRight - kPlotLeft - 40) / std::max<double>(static_cast<double>(span_us), 1000.0);
  for (size_t k = 0; k < layout.stamps.size(); ++k) {
    base[k] = kPlotLeft + static_cast<double>(layout.stamps[k] - lo) * per_us;
  }
  PlaceStamps(layout, base, cards, lanes.size());

  // Where a time falls in band b: its stamp's x there, or an end of the band.
  auto x_in = [&](int64_t us, int b) {
    const size_t k = layout.Index(us);
    if (layout.band[k] < b) return kPlotLeft - 6;
    if (layout.band[k] > b) return kPlotRight + 6;
    return layout.x[k];
  };
  for (int b = 0; b < layout.bands; ++b) {
    if (b > 0) y += 10;
    const double lanes_top = y;
    std::string backgrounds, grid, body;
    int64_t band_lo = -1, band_hi = -1;
    for (size_t k = 0; k < layout.stamps.size(); ++k) {
      if (layout.band[k] != b) continue;
      if (band_lo < 0) band_lo = layout.stamps[k];
      band_hi = layout.stamps[k];
    }
    auto in_band = [&](int64_t from, int64_t to) { return to >= band_lo && from <= band_hi; };
    size_t drawn = 0;
    for (size_t li = 0; li < lanes.size(); ++li) {
      const Lane& lane = lanes[li];
      bool any = false;
      for (const LaneStep& st : lane.steps) any |= layout.band[layout.Index(st.at_us)] == b;
      for (const Span& sp : lane.spans) any |= in_band(sp.start_us, sp.end_us);
      for (const LockWait& w : lane.waits) any |= in_band(w.start_us, w.end_us);
      if (!any) continue;
      const double bar_y = y + kBarTop;
      std::string bars;
      for (const Span& span : lane.spans) {
        if (!in_band(span.start_us, span.end_us)) continue;
        double x0 = x_in(span.start_us, b), x1 = x_in(span.end_us, b);
        if (span.kind == Span::Kind::kAutocommit) {
          x0 -= kAutocommitBar / 2;
          x1 = x0 + kAutocommitBar;
        } else if (x1 - x0 < kMinBar) {
          x1 = x0 + kMinBar;
        }
        const std::string tip =
            span.kind == Span::Kind::kAutocommit
                ? fmt::format("{} (autocommit): {}", span.steps.front().statement,
                              span.steps.front().result)
                : fmt::format("transaction: {}", JoinSteps(span.steps));
        bars += fmt::format(
            "<rect class=\"bar {}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
            "rx=\"3\"><title>{}</title></rect>\n",
            SpanClass(span), Num(x0), Num(bar_y), Num(x1 - x0), Num(kBarHeight), Escape(tip));
      }
      for (const LockWait& wait : lane.waits) {
        if (!in_band(wait.start_us, wait.end_us)) continue;
        const double x0 = x_in(wait.start_us, b);
        const double x1 = std::max(x_in(wait.end_us, b), x0 + kMinBar);
        bars += fmt::format(
            "<rect class=\"wait\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>waits for "
            "{}</title></rect>\n",
            Num(x0), Num(bar_y + 5), Num(x1 - x0), Num(kBarHeight - 10), Escape(wait.target));
      }
      for (const Mark& mark : lane.marks) {
        if (layout.band[layout.Index(mark.at_us)] == b) {
          bars += Glyph(mark, layout.x[layout.Index(mark.at_us)], bar_y);
        }
      }
      double tallest = 0;
      std::string card_svg;
      const double cards_top = bar_y + kBarHeight + 12;
      for (const Card& c : cards) {
        if (c.lane != li || layout.band[c.first] != b) continue;
        const double left = c.left;
        tallest = std::max(tallest, c.height());
        card_svg += fmt::format(
            "<line class=\"leader\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n",
            Num(layout.x[c.first]), Num(bar_y + kBarHeight), Num(cards_top));
        card_svg += fmt::format(
            "<rect class=\"card\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"4\"/>\n",
            Num(left), Num(cards_top), Num(c.width), Num(c.height()));
        double baseline = cards_top + 19;
        for (const CardLine& l : c.lines) {
          card_svg += fmt::format("<text class=\"{}\" x=\"{}\" y=\"{}\">{}</text>\n", l.css,
                                  Num(left + kCardPad), Num(baseline), Escape(l.text));
          baseline += kLine;
        }
      }
      const double lane_height = std::max(kBarTop + kBarHeight + 12 + tallest + 12, 84.0);
      const bool secondary = lane.secondary;
      if (drawn % 2 == 0 || secondary) {
        backgrounds += fmt::format(
            "<rect class=\"lane-bg{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n",
            secondary ? " secondary" : "", Num(kMargin - 8), Num(y),
            Num(kWidth - 2 * kMargin + 16), Num(lane_height));
      }
      ++drawn;
      body += fmt::format("<g class=\"{}\">\n", secondary ? "lane-group secondary" : "lane-group");
      body += fmt::format("<text class=\"lane{}\" x=\"{}\" y=\"{}\">{}</text>\n",
                          secondary ? " secondary" : "", Num(kMargin), Num(bar_y + 19),
                          Escape(lane.title));
      if (!lane.sub.empty()) {
        body += fmt::format("<text class=\"sub\" x=\"{}\" y=\"{}\">{}</text>\n", Num(kMargin),
                            Num(bar_y + 44), Escape(lane.sub));
      }
      body += bars + card_svg + "</g>\n";
      y += lane_height;
    }

    // The axis of the band, under its lanes.
    std::string axis = fmt::format(
        "<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", Num(kPlotLeft),
        Num(y + 4), Num(kPlotRight), Num(y + 4));
    std::string caption;
    if (!layout.time_axis) {
      caption = clocks.empty()
                    ? fmt::format("steps in order ({:.1f} ms)", static_cast<double>(span_us) / 1000.0)
                    : std::string("steps (simulated clock)");
    } else {
      caption = "ms since the run began";
    }
    if (b > 0) caption += " (continued)";
    double free_from = std::max(kPlotLeft - 40, kMargin + TextWidth(caption, 16) + 14);
    auto tick = [&](double x, const std::string& label) {
      grid += fmt::format("<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n",
                          Num(x), Num(lanes_top), Num(y + 4));
      axis += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n",
                          Num(x), Num(y + 4), Num(y + 11));
      const double w = TextWidth(label, 16);
      if (x - w / 2 >= free_from && x + w / 2 <= kWidth - 8) {
        axis += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\">{}</text>\n", Num(x),
                            Num(y + 28), Escape(label));
        free_from = x + w / 2 + 14;
      }
    };
    if (!layout.time_axis) {
      for (const TraceEvent* c : clocks) {
        const size_t k = layout.Index(c->at_us);
        if (layout.band[k] == b) tick(layout.x[k], c->detail);
      }
    } else {
      // Times between two stamps are placed between their x, in proportion.
      const double step = NiceStep(static_cast<double>(std::max<int64_t>(band_hi - band_lo, 1000)) / 1000.0, 7);
      for (double t = std::ceil(static_cast<double>(band_lo) / 1000.0 / step) * step;
           t * 1000.0 <= static_cast<double>(band_hi) + 1e-6; t += step) {
        const auto us = static_cast<int64_t>(std::llround(t * 1000.0));
        size_t k = layout.Index(us);
        double x = layout.x[k];
        if (k > 0 && layout.stamps[k] > us && layout.band[k - 1] == b) {
          const double f = static_cast<double>(us - layout.stamps[k - 1]) /
                           static_cast<double>(layout.stamps[k] - layout.stamps[k - 1]);
          x = layout.x[k - 1] + f * (layout.x[k] - layout.x[k - 1]);
        }
        tick(x, FormatMs(t, step));
      }
    }
    axis += fmt::format("<text class=\"caption\" x=\"{}\" y=\"{}\">{}</text>\n", Num(kMargin),
                        Num(y + 28), Escape(caption));
    s += backgrounds + grid + body + axis;
    y += 40;
  }
  out.height = y - top;
  return out;
}

Out DrawSection(const TimelineSection& section, double top) {
  Out out;
  double y = top;
  std::string& s = out.svg;
  s += fmt::format("<text class=\"section\" x=\"{}\" y=\"{}\">{}</text>\n", Num(kMargin),
                   Num(y + 26), Escape(section.scenario));
  y += 36;
  // The line with its final figures, right and wrong painted as on the terminal.
  const size_t chars = static_cast<size_t>((kWidth - 2 * kMargin) / (0.61 * 18));
  for (const std::vector<Run>& runs : WrapLine(section.line, section.marks, chars)) {
    s += fmt::format("<text class=\"line\" xml:space=\"preserve\" x=\"{}\" y=\"{}\">",
                     Num(kMargin), Num(y + 18));
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
    Out part = DrawPart(parts[i], ids, y);
    s += part.svg;
    y += part.height;
  }
  out.height = y - top;
  return out;
}

// The key to the drawing, in rows of items; sets *height.
std::string Legend(double top, double* height) {
  std::string s;
  double x = kMargin, y = top;
  auto item = [&](const std::function<std::string(double, double)>& swatch,
                  const std::string& text, const char* css = "legend") {
    const double width = 40 + TextWidth(text) + 28;
    if (x + width > kWidth - kMargin) {
      x = kMargin;
      y += 32;
    }
    s += swatch(x, y);
    s += fmt::format("<text class=\"{}\" x=\"{}\" y=\"{}\">{}</text>\n", css, Num(x + 40),
                     Num(y + 19), Escape(text));
    x += width;
  };
  auto bar = [](const char* css, double w) {
    return [css, w](double bx, double by) {
      return fmt::format(
          "<rect class=\"bar {}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"20\" rx=\"3\"/>\n", css,
          Num(bx + 32 - w), Num(by + 4), Num(w));
    };
  };
  auto glyph = [](Mark::Kind kind, Tone tone, double dy) {
    return [kind, tone, dy](double gx, double gy) {
      Mark m;
      m.kind = kind;
      m.tone = tone;
      return Glyph(m, gx + 16, gy + dy);
    };
  };
  item(glyph(Mark::Kind::kOutcome, Tone::kRight, 2), "✓ right for the business", "legend right");
  item(glyph(Mark::Kind::kOutcome, Tone::kWrong, 2), "✗ wrong for the business", "legend wrong");
  item(bar("commit", 32), "transaction committed");
  item(bar("rollback", 32), "rolled back");
  item(bar("died", 32), "its process died inside");
  item(bar("auto", kAutocommitBar), "statement on its own (autocommit)");
  item(
      [](double wx, double wy) {
        return fmt::format("<rect class=\"wait\" x=\"{}\" y=\"{}\" width=\"32\" height=\"14\"/>\n",
                           Num(wx), Num(wy + 7));
      },
      "waits for a lock");
  item(glyph(Mark::Kind::kDelivery, Tone::kPlain, 0), "delivery");
  item(glyph(Mark::Kind::kSettle, Tone::kPlain, 0), "ack or nack to the broker");
  item(glyph(Mark::Kind::kAckLost, Tone::kPlain, 0), "ack lost on the way");
  item(glyph(Mark::Kind::kHook, Tone::kPlain, 10), "hook point");
  item(glyph(Mark::Kind::kCrash, Tone::kPlain, 0), "crash");
  item(glyph(Mark::Kind::kDied, Tone::kPlain, 0), "process death seen");
  item(glyph(Mark::Kind::kRecover, Tone::kPlain, 0), "what the database did");
  item(glyph(Mark::Kind::kSend, Tone::kPlain, 0), "email sent");
  item(glyph(Mark::Kind::kBroker, Tone::kPlain, 0), "broker step");
  *height = y + 36 - top;
  return s;
}

constexpr const char* kStyle = R"svg(<style>
text { font-family: 'DejaVu Sans Mono', Menlo, Consolas, monospace; font-size: 17px; fill: #1b1b1b; }
.title { font-family: 'DejaVu Sans', Verdana, Arial, sans-serif; font-size: 30px; font-weight: bold; }
.subtitle { font-family: 'DejaVu Sans', Verdana, Arial, sans-serif; font-size: 18px; fill: #455a64; }
.section { font-family: 'DejaVu Sans', Verdana, Arial, sans-serif; font-size: 26px; font-weight: bold; }
.part-title { font-family: 'DejaVu Sans', Verdana, Arial, sans-serif; font-size: 21px; font-weight: bold; fill: #263238; }
.reset { font-size: 17px; fill: #546e7a; font-style: italic; }
.line { font-size: 18px; }
.line.right, .legend.right, .card-right, text.right { fill: #1b5e20; font-weight: bold; }
.line.wrong, .legend.wrong, text.wrong { fill: #b71c1c; font-weight: bold; }
.lane { font-family: 'DejaVu Sans', Verdana, Arial, sans-serif; font-size: 20px; font-weight: bold; }
.lane.secondary { fill: #607d8b; font-style: italic; font-weight: normal; }
.sub, .caption, .tick { fill: #546e7a; font-size: 16px; }
.tick { text-anchor: middle; }
.note { fill: #546e7a; }
.head { font-weight: bold; fill: #1a237e; }
.failed { font-weight: bold; fill: #000; }
.step { fill: #1b1b1b; }
.lane-bg { fill: #f4f6f8; }
.lane-bg.secondary { fill: #eceff1; }
.grid { stroke: #dde1e6; stroke-width: 1; }
.axis { stroke: #78909c; stroke-width: 1.5; }
.divider { stroke: #37474f; stroke-width: 2; }
.bar { stroke-width: 2; }
.bar.commit { fill: #b0bec5; stroke: #37474f; }
.bar.rollback { fill: #ffffff; stroke: #546e7a; stroke-dasharray: 6 4; }
.bar.died { fill: #eceff1; stroke: #000; stroke-dasharray: 3 3; stroke-width: 3; }
.bar.open { fill: #eeeeee; stroke: #9e9e9e; stroke-dasharray: 2 4; }
.bar.auto { fill: #78909c; stroke: #37474f; }
.wait { fill: url(#hatch); stroke: #ff8f00; stroke-width: 2; }
.card { fill: #ffffff; stroke: #b0bec5; stroke-width: 1.5; }
.leader { stroke: #90a4ae; stroke-width: 1.5; }
.crash-mark { stroke: #000; stroke-width: 4; fill: none; }
.died-mark { fill: #000; }
.hook-mark { fill: #546e7a; }
.send-mark { fill: #6a1b9a; }
.recover-mark { fill: #1565c0; stroke: #0d47a1; }
.delivery-mark { stroke: #1a237e; stroke-width: 2.5; fill: none; }
.settle-mark { stroke: #5d4037; stroke-width: 2.5; fill: none; }
.acklost-mark { stroke: #5d4037; stroke-width: 2.5; fill: none; }
.outcome-mark { fill: #90a4ae; }
.outcome-mark.right { fill: #2e7d32; }
.outcome-mark.wrong { fill: #c62828; }
.broker-mark { fill: #5d4037; }
.secondary text { fill-opacity: 0.85; }
</style>
<defs>
<pattern id="hatch" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
<rect width="8" height="8" fill="#fff8e1"/>
<line x1="0" y1="0" x2="0" y2="8" stroke="#ffa000" stroke-width="4"/>
</pattern>
</defs>
)svg";

}  // namespace

std::string SvgTimeline(const std::vector<TimelineSection>& sections) {
  std::string body;
  double y = 92;
  for (size_t i = 0; i < sections.size(); ++i) {
    if (i > 0) {
      body += fmt::format("<line class=\"divider\" x1=\"0\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\"/>\n",
                          Num(y + 8), Num(kWidth));
      y += 20;
    }
    Out out = DrawSection(sections[i], y);
    body += out.svg;
    y += out.height + 12;
  }
  double legend_height = 0;
  body += Legend(y, &legend_height);
  y += legend_height + 6;

  std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\">\n",
      Num(kWidth), Num(y));
  svg += "<title>dedupsim timeline</title>\n";
  svg += kStyle;
  svg += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n",
                     Num(kWidth), Num(y));
  svg += fmt::format("<text class=\"title\" x=\"{}\" y=\"42\">dedupsim timeline</text>\n",
                     Num(kMargin));
  svg += fmt::format(
      "<text class=\"subtitle\" x=\"{}\" y=\"74\">one lane per actor; bars are transactions; "
      "green ✓ is right for the business, red ✗ is wrong</text>\n",
      Num(kMargin));
  svg += body;
  svg += "</svg>\n";
  return svg;
}

}  // namespace dedupsim
