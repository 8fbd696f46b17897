#include "views/timeline_lane.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "views/timeline_text.h"

namespace dedupsim::timeline {

namespace {

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

// The cues of a bar that goes on past its band's end (a chevron right of its end) or began
// in the band before (a chevron left of its start), on the bar row whose top is y.
std::string Cues(const Reach& r, double y) {
  const double mid = y + kBarHeight / 2;
  std::string out;
  auto chevron = [&](double x) {
    out += fmt::format("<path class=\"cue\" d=\"M{} {} L{} {} L{} {}\"/>\n", Num(x), Num(mid - 7),
                       Num(x + 6), Num(mid), Num(x), Num(mid + 7));
  };
  if (r.before) chevron(kPlotLeft - 9);
  if (r.after) chevron(r.x1 + 3);
  return out;
}

const char* CueWords(const Reach& r) {
  if (r.before && r.after) return " (from the band above, on in the band below)";
  if (r.before) return " (from the band above)";
  if (r.after) return " (on in the band below)";
  return "";
}

}  // namespace

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
          Num(x), Num(mid + 11), Num(mid - 11), Num(x - 6), Num(mid - 4), Num(x + 6), Num(mid - 1),
          Num(mid + 9));
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

bool LaneInBand(const Lane& lane, const Layout& layout, const Band& band) {
  bool any = false;
  for (const LaneStep& st : lane.steps) any |= layout.band[layout.Index(st.at_us)] == band.index;
  for (const Span& sp : lane.spans) any |= band.Where(layout, sp.start_us, sp.end_us).has_value();
  for (const LockWait& w : lane.waits) any |= band.Where(layout, w.start_us, w.end_us).has_value();
  for (const LockHeld& h : lane.held) any |= band.Where(layout, h.start_us, h.end_us).has_value();
  return any;
}

LaneDrawing DrawLane(const Lane& lane, size_t index, const PartLayout& part, const Band& band,
                     double top, bool shaded) {
  const Layout& layout = part.layout;
  const int b = band.index;
  const double bar_y = top + kBarTop;
  std::string bars;
  // Transactions first, then the autocommit statements over them: a statement of another
  // connection made during a transaction (second-connection) stays in sight.
  std::vector<const Span*> drawn;
  for (const Span& span : lane.spans) {
    if (span.kind == Span::Kind::kTransaction) drawn.push_back(&span);
  }
  for (const Span& span : lane.spans) {
    if (span.kind == Span::Kind::kAutocommit) drawn.push_back(&span);
  }
  for (const Span* drawn_span : drawn) {
    const Span& span = *drawn_span;
    const std::optional<Reach> r = band.Where(layout, span.start_us, span.end_us);
    if (!r) continue;
    double x0 = r->x0, x1 = r->x1;
    if (span.kind == Span::Kind::kAutocommit) {
      x0 -= kAutocommitBar / 2;
      x1 = x0 + kAutocommitBar;
    } else if (x1 - x0 < kMinBar) {
      x1 = x0 + kMinBar;
    }
    const std::string tip = span.kind == Span::Kind::kAutocommit
                                ? fmt::format("{} (autocommit): {}", span.steps.front().statement,
                                              span.steps.front().result)
                                : fmt::format("transaction: {}", JoinSteps(span.steps));
    bars += fmt::format(
        "<rect class=\"bar {}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
        "rx=\"3\"><title>{}{}</title></rect>\n",
        SpanClass(span), Num(x0), Num(bar_y), Num(x1 - x0), Num(kBarHeight), Escape(tip),
        CueWords(*r));
    bars += Cues(*r, bar_y);
  }
  // A write lock held: a dark stripe along the foot of the transaction's bar, from the
  // statement that took it to the one that released it.
  bool write_lock = false;
  for (const LockHeld& held : lane.held) {
    const std::optional<Reach> r = band.Where(layout, held.start_us, held.end_us);
    if (!r) continue;
    write_lock = true;
    const double x1 = std::max(r->x1, r->x0 + kMinHeld);
    bars += fmt::format(
        "<rect class=\"held\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>holds the "
        "write lock{}{}</title></rect>\n",
        Num(r->x0), Num(bar_y + kBarHeight - kHeldHeight), Num(x1 - r->x0), Num(kHeldHeight),
        held.target == "database" ? "" : " of the " + Escape(held.target), CueWords(*r));
  }
  for (const LockWait& wait : lane.waits) {
    const std::optional<Reach> r = band.Where(layout, wait.start_us, wait.end_us);
    if (!r) continue;
    const double x1 = std::max(r->x1, r->x0 + kMinBar);
    bars += fmt::format(
        "<rect class=\"wait\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>waits for "
        "{}{}</title></rect>\n",
        Num(r->x0), Num(bar_y + 5), Num(x1 - r->x0), Num(kBarHeight - 10), Escape(wait.target),
        CueWords(*r));
    bars += Cues(*r, bar_y);
  }
  for (const Mark& mark : lane.marks) {
    if (layout.band[layout.Index(mark.at_us)] == b) {
      bars += Glyph(mark, layout.x[layout.Index(mark.at_us)], bar_y);
    }
  }
  double tallest = 0;
  std::string card_svg;
  const double cards_top = bar_y + kBarHeight + 12;
  for (const Card& c : part.cards) {
    if (c.lane != index || layout.band[c.first] != b) continue;
    const double left = c.left;
    tallest = std::max(tallest, c.height());
    const double at = layout.x[c.first];
    if (left <= at) {
      card_svg += fmt::format(
          "<line class=\"leader\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n", Num(at),
          Num(bar_y + kBarHeight), Num(cards_top));
    } else {
      // The card stands right of its step (the card before it on the lane is under it): the
      // leader goes down, then along the gap above the cards, then down into the card.
      const double turn = cards_top - 6;
      const double into = left + kCardPad;
      card_svg += fmt::format(
          "<line class=\"leader\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n"
          "<line class=\"leader\" x1=\"{0}\" y1=\"{2}\" x2=\"{3}\" y2=\"{2}\"/>\n"
          "<line class=\"leader\" x1=\"{3}\" y1=\"{2}\" x2=\"{3}\" y2=\"{4}\"/>\n",
          Num(at), Num(bar_y + kBarHeight), Num(turn), Num(into), Num(cards_top));
    }
    card_svg += fmt::format(
        "<rect class=\"card\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"4\"/>\n", Num(left),
        Num(cards_top), Num(c.width), Num(c.height()));
    double baseline = cards_top + 19;
    for (const CardLine& l : c.lines) {
      card_svg += fmt::format("<text class=\"{}\" x=\"{}\" y=\"{}\">{}</text>\n", l.css,
                              Num(left + kCardPad), Num(baseline), Escape(l.text));
      baseline += kLine;
    }
  }
  // The lane's name, wrapped to end clear of the plot (a mark at its left edge), and what
  // is under it.
  const std::vector<std::string> title = Wrap(lane.title, kLaneTitleChars);
  const double title_extra = static_cast<double>(title.size() - 1) * kLine;
  LaneDrawing out;
  out.write_lock = write_lock;
  out.height = std::max(kBarTop + kBarHeight + 12 + tallest + 12, 84.0 + title_extra);
  const bool secondary = lane.secondary;
  if (shaded) {
    out.background =
        fmt::format("<rect class=\"lane-bg{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n",
                    secondary ? " secondary" : "", Num(kMargin - 8), Num(top),
                    Num(kWidth - 2 * kMargin + 16), Num(out.height));
  }
  std::string& body = out.body;
  body += fmt::format("<g class=\"{}\">\n", secondary ? "lane-group secondary" : "lane-group");
  for (size_t i = 0; i < title.size(); ++i) {
    body += fmt::format("<text class=\"lane{}\" x=\"{}\" y=\"{}\">{}</text>\n",
                        secondary ? " secondary" : "", Num(kMargin),
                        Num(bar_y + 19 + static_cast<double>(i) * kLine), Escape(title[i]));
  }
  if (!lane.sub.empty()) {
    body += fmt::format("<text class=\"sub\" x=\"{}\" y=\"{}\">{}</text>\n", Num(kMargin),
                        Num(bar_y + 44 + title_extra), Escape(lane.sub));
  }
  body += bars + card_svg + "</g>\n";
  return out;
}

}  // namespace dedupsim::timeline
