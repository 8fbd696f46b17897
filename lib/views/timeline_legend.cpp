#include "views/timeline_legend.h"

#include <fmt/format.h>

#include <functional>

#include "views/lanes.h"
#include "views/timeline_lane.h"
#include "views/timeline_text.h"

namespace dedupsim::timeline {

namespace {

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
.band-end { stroke: #78909c; stroke-width: 1.5; stroke-dasharray: 6 5; }
.cue { stroke: #37474f; stroke-width: 3; fill: none; }
.divider { stroke: #37474f; stroke-width: 2; }
.bar { stroke-width: 2; }
.bar.commit { fill: #b0bec5; stroke: #37474f; }
.bar.rollback { fill: #ffffff; stroke: #546e7a; stroke-dasharray: 6 4; }
.bar.died { fill: #eceff1; stroke: #000; stroke-dasharray: 3 3; stroke-width: 3; }
.bar.open { fill: #eeeeee; stroke: #9e9e9e; stroke-dasharray: 2 4; }
.bar.auto { fill: #78909c; stroke: #37474f; }
.wait { fill: url(#hatch); stroke: #ff8f00; stroke-width: 2; }
.held { fill: #1a237e; }
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

std::string Legend(double top, bool write_lock, double* height) {
  std::string s;
  double x = kMargin, y = top;
  auto item = [&](const std::function<std::string(double, double)>& swatch, const std::string& text,
                  const char* css = "legend") {
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
  if (write_lock) {
    item(
        [](double hx, double hy) {
          return fmt::format("<rect class=\"bar commit\" x=\"{}\" y=\"{}\" width=\"32\" "
                             "height=\"20\" rx=\"3\"/>\n<rect class=\"held\" x=\"{}\" y=\"{}\" "
                             "width=\"32\" height=\"{}\"/>\n",
                             Num(hx), Num(hy + 4), Num(hx), Num(hy + 24 - kHeldHeight), Num(kHeldHeight));
        },
        "holds the write lock");
  }
  item(glyph(Mark::Kind::kDelivery, Tone::kPlain, 0), "delivery");
  item(glyph(Mark::Kind::kSettle, Tone::kPlain, 0), "ack or nack to the broker");
  item(glyph(Mark::Kind::kAckLost, Tone::kPlain, 0), "ack lost on the way");
  item(glyph(Mark::Kind::kHook, Tone::kPlain, 10), "hook point");
  item(glyph(Mark::Kind::kCrash, Tone::kPlain, 0), "crash");
  item(glyph(Mark::Kind::kDied, Tone::kPlain, 0), "process death seen");
  item(glyph(Mark::Kind::kRecover, Tone::kPlain, 0), "what the database did");
  item(glyph(Mark::Kind::kSend, Tone::kPlain, 0), "email sent");
  item(glyph(Mark::Kind::kBroker, Tone::kPlain, 0), "a step with the broker (send, deliver)");
  *height = y + 36 - top;
  return s;
}

const char* Style() { return kStyle; }

}  // namespace dedupsim::timeline
