#include "views/svg_timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "views/lanes.h"
#include "views/step_text.h"

namespace dedupsim {

namespace {

constexpr double kWidth = 1200;
constexpr double kPlotLeft = 190;
constexpr double kPlotRight = kWidth - 60;
constexpr double kBarTop = 10;
constexpr double kBarHeight = 18;
constexpr double kRowHeight = 15;
constexpr double kCharWidth = 6.63;  // 11 px monospace
constexpr double kMinBar = 4;
constexpr double kAutocommitBar = 7;

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

double TextWidth(std::string_view text) {
  return static_cast<double>(text.size()) * kCharWidth + 4;
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

struct Scale {
  double lo_us = 0;
  double hi_us = 1;
  double X(int64_t us) const {
    return kPlotLeft +
           (static_cast<double>(us) - lo_us) / (hi_us - lo_us) * (kPlotRight - kPlotLeft);
  }
};

// A text placed below a lane's bar, in the first row where it overlaps nothing.
struct Label {
  double x = 0;  // the point it refers to
  std::string text;
  std::string css;          // class of the text
  bool on_bar_row = false;  // may sit right of the bar, on the bar's own row
  double bar_right = 0;     // with on_bar_row: where the bar ends
};

struct Placed {
  Label label;
  std::vector<std::string> lines;  // the text, wrapped
  double left = 0;
  int row = 0;  // the first row; -1: the bar row
};

// Long texts (a recovery's account) are wrapped into lines of at most this many chars.
constexpr size_t kLabelChars = 72;

std::vector<std::string> WrapLabel(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(start, end - start);
    if (!line.empty() && line.size() + 1 + word.size() > kLabelChars) {
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

class Rows {
 public:
  bool Free(int row, double left, double right) const {
    auto it = taken_.find(row);
    if (it == taken_.end()) return true;
    for (auto [l, r] : it->second) {
      if (left < r + 6 && l < right + 6) return false;
    }
    return true;
  }
  void Take(int row, double left, double right) { taken_[row].push_back({left, right}); }
  int count() const {
    int n = 0;
    for (const auto& [row, spans] : taken_) n = std::max(n, row + 1);
    return n;
  }

 private:
  std::map<int, std::vector<std::pair<double, double>>> taken_;
};

// Each label in the first rows below the bar where it overlaps nothing, left-aligned at
// its point, or shifted left so that it ends inside the drawing.
std::vector<Placed> PlaceLabels(std::vector<Label> labels, Rows& rows) {
  std::stable_sort(labels.begin(), labels.end(),
                   [](const Label& a, const Label& b) { return a.x < b.x; });
  std::vector<Placed> placed;
  for (Label& label : labels) {
    std::vector<std::string> lines = WrapLabel(label.text);
    double width = 0;
    for (const std::string& line : lines) width = std::max(width, TextWidth(line));
    if (label.on_bar_row && lines.size() == 1) {
      double left = label.bar_right + 8;
      if (left + width <= kWidth - 4 && rows.Free(-1, left, left + width)) {
        rows.Take(-1, left, left + width);
        placed.push_back({label, lines, left, -1});
        continue;
      }
    }
    const double left = std::clamp(label.x - 2, 8.0, std::max(8.0, kWidth - 8 - width));
    const int n = static_cast<int>(lines.size());
    auto fits = [&](int first) {
      for (int r = first; r < first + n; ++r) {
        if (!rows.Free(r, left, left + width)) return false;
      }
      return true;
    };
    int row = 0;
    while (!fits(row)) ++row;
    for (int r = row; r < row + n; ++r) rows.Take(r, left, left + width);
    placed.push_back({label, lines, left, row});
  }
  return placed;
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

std::string EndLabel(const Span& span) {
  switch (span.end) {
    case Span::End::kCommit:
      return "COMMIT";
    case Span::End::kRollback:
      return span.crashed ? "ROLLBACK (after the crash)" : "ROLLBACK";
    case Span::End::kDied:
      return "never committed: " + span.end_detail;
    case Span::End::kOpen:
      return "still open when the record ends";
    case Span::End::kStatement:
      break;
  }
  return "";
}

std::string Join(const std::vector<SpanStep>& steps, bool skip_control) {
  std::string out;
  for (const SpanStep& step : steps) {
    if (skip_control && ClassifySql(step.statement) != SqlControl::kNone) continue;
    if (!out.empty()) out += ", ";
    out += step.statement;
  }
  return out;
}

std::string MarkClass(Mark::Kind kind) {
  switch (kind) {
    case Mark::Kind::kDelivery:
      return "delivery";
    case Mark::Kind::kHook:
      return "hook";
    case Mark::Kind::kCrash:
      return "crash";
    case Mark::Kind::kSend:
      return "send";
    case Mark::Kind::kDied:
      return "crash";
    case Mark::Kind::kRecover:
      return "recover";
    case Mark::Kind::kFailure:
      return "failure";
    case Mark::Kind::kOther:
      break;
  }
  return "note";
}

// Consumer instances are letters (A, B); other actors (dispatcher, downstream, operator)
// are drawn under their own names, as in the Mermaid view.
std::string LaneTitle(const Lane& lane) {
  if (lane.instance.empty()) return "set-up";
  return lane.instance.size() == 1 ? "Consumer " + lane.instance : lane.instance;
}

// One marker glyph centred on x, on the bar row whose top is y.
std::string Glyph(Mark::Kind kind, double x, double y) {
  double mid = y + kBarHeight / 2;
  switch (kind) {
    case Mark::Kind::kCrash:
      return fmt::format("<path class=\"crash-mark\" d=\"M{0} {1} L{2} {3} M{0} {3} L{2} {1}\"/>\n",
                         Num(x - 6), Num(mid - 6), Num(x + 6), Num(mid + 6));
    case Mark::Kind::kDied:
      return fmt::format(
          "<rect class=\"died-mark\" x=\"{}\" y=\"{}\" width=\"10\" height=\"10\"/>\n", Num(x - 5),
          Num(mid - 5));
    case Mark::Kind::kHook:
      return fmt::format("<path class=\"hook-mark\" d=\"M{} {} L{} {} L{} {} Z\"/>\n", Num(x - 5),
                         Num(y - 7), Num(x + 5), Num(y - 7), Num(x), Num(y));
    case Mark::Kind::kSend:
      return fmt::format(
          "<path class=\"send-mark\" d=\"M{0} {1} L{2} {3} L{0} {4} L{5} {3} Z\"/>\n", Num(x),
          Num(mid - 7), Num(x + 7), Num(mid), Num(mid + 7), Num(x - 7));
    case Mark::Kind::kRecover:
      return fmt::format("<circle class=\"recover-mark\" cx=\"{}\" cy=\"{}\" r=\"6\"/>\n", Num(x),
                         Num(mid));
    case Mark::Kind::kDelivery:
      return fmt::format(
          "<path class=\"delivery-mark\" d=\"M{0} {1} L{0} {2} M{3} {4} L{0} {1} L{5} {4}\"/>\n",
          Num(x), Num(y - 8), Num(y + kBarHeight + 2), Num(x - 4), Num(y - 3), Num(x + 4));
    case Mark::Kind::kFailure:
    case Mark::Kind::kOther:
      break;
  }
  return "";
}

struct SectionOut {
  std::string svg;
  double height = 0;
};

SectionOut DrawSection(const TimelineSection& section, double top) {
  SectionOut out;
  std::string& s = out.svg;
  double y = top;
  s += fmt::format("<text class=\"section\" x=\"16\" y=\"{}\">{}</text>\n", Num(y + 18),
                   Escape(section.scenario));
  s += fmt::format("<text class=\"line\" x=\"16\" y=\"{}\">{}</text>\n", Num(y + 38),
                   Escape(section.line));
  y += 54;

  std::vector<Lane> lanes = BuildLanes(section.events);
  if (lanes.empty()) {
    s += fmt::format("<text class=\"note\" x=\"{}\" y=\"{}\">no steps were recorded</text>\n",
                     Num(kPlotLeft), Num(y + 14));
    out.height = y + 30 - top;
    return out;
  }

  int64_t lo = lanes.front().first_us, hi = lanes.front().last_us;
  for (const Lane& lane : lanes) {
    lo = std::min(lo, lane.first_us);
    hi = std::max(hi, lane.last_us);
    for (const Span& span : lane.spans) hi = std::max(hi, span.end_us);
  }
  double range = std::max<double>(static_cast<double>(hi - lo), 1000.0);
  Scale scale{static_cast<double>(lo) - 0.03 * range, static_cast<double>(hi) + 0.04 * range};
  const double lanes_top = y;

  std::string backgrounds;  // drawn first, under the grid
  std::string body;
  for (size_t li = 0; li < lanes.size(); ++li) {
    const Lane& lane = lanes[li];
    Rows rows;
    std::vector<Label> labels;
    std::string bars;
    const double bar_y = y + kBarTop;

    for (const Span& span : lane.spans) {
      double x0 = scale.X(span.start_us), x1 = scale.X(span.end_us);
      if (span.kind == Span::Kind::kAutocommit) {
        x0 = x1 - kAutocommitBar;
      } else if (x1 - x0 < kMinBar) {
        x1 = x0 + kMinBar;
      }
      rows.Take(-1, x0, x1);
      std::string tip = span.kind == Span::Kind::kAutocommit
                            ? fmt::format("{} (autocommit): {}", span.steps.front().statement,
                                          span.steps.front().result)
                            : fmt::format("transaction: {}", Join(span.steps, false));
      bars += fmt::format(
          "<rect class=\"bar {}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
          "rx=\"2\"><title>{}</title></rect>\n",
          SpanClass(span), Num(x0), Num(bar_y), Num(x1 - x0), Num(kBarHeight), Escape(tip));
      if (span.kind == Span::Kind::kAutocommit) {
        labels.push_back({x1, span.steps.front().statement, "label", false, 0});
        continue;
      }
      for (const SpanStep& step : span.steps) {
        double sx = scale.X(step.at_us);
        bars += fmt::format(
            "<line class=\"step\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"><title>{3}: "
            "{4}</title></line>\n",
            Num(sx), Num(bar_y + kBarHeight - 5), Num(bar_y + kBarHeight), Escape(step.statement),
            Escape(step.result));
      }
      std::string inside = Join(span.steps, true);
      std::string content = inside.empty() ? "BEGIN" : "BEGIN: " + inside;
      if (x1 - x0 >= TextWidth(content) + 6) {
        bars += fmt::format("<text class=\"inbar\" x=\"{}\" y=\"{}\">{}</text>\n", Num(x0 + 4),
                            Num(bar_y + 13), Escape(content));
      } else {
        labels.push_back({x0, content, "label", false, 0});
      }
      const char* end_css = span.end == Span::End::kCommit     ? "commit-label"
                            : span.end == Span::End::kRollback ? "rollback-label"
                            : span.end == Span::End::kDied     ? "died-label"
                                                               : "label";
      labels.push_back({x1, EndLabel(span), end_css, true, x1});
    }

    std::string waits;
    for (const LockWait& wait : lane.waits) {
      double x0 = scale.X(wait.start_us), x1 = std::max(scale.X(wait.end_us), x0 + kMinBar);
      waits += fmt::format(
          "<rect class=\"wait\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>lock "
          "wait</title></rect>\n",
          Num(x0), Num(bar_y + 4), Num(x1 - x0), Num(kBarHeight - 8));
      double ms = static_cast<double>(wait.end_us - wait.start_us) / 1000.0;
      std::string text =
          wait.statement.empty()
              ? fmt::format("waits for the write lock ({:.1f} ms)", ms)
              : fmt::format("{} waits for the write lock: {:.1f} ms", wait.statement, ms);
      labels.push_back({x0, text, "wait-label", false, 0});
    }

    std::string marks;
    for (const Mark& mark : lane.marks) {
      double x = scale.X(mark.at_us);
      marks += Glyph(mark.kind, x, bar_y);
      std::string text = mark.kind == Mark::Kind::kHook   ? "hook " + mark.text
                         : mark.kind == Mark::Kind::kSend ? "email sent (" + mark.text + ")"
                         : mark.kind == Mark::Kind::kDied ? "died: " + mark.text
                                                          : mark.text;
      labels.push_back({x, text, MarkClass(mark.kind) + "-label", false, 0});
    }

    std::vector<Placed> placed = PlaceLabels(labels, rows);
    const double rows_top = bar_y + kBarHeight + 6;
    const double lane_height = kBarTop + kBarHeight + 6 + rows.count() * kRowHeight + 8;
    if (li % 2 == 0) {
      backgrounds +=
          fmt::format("<rect class=\"lane-bg\" x=\"8\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n",
                      Num(y), Num(kWidth - 16), Num(lane_height));
    }
    body += fmt::format("<text class=\"lane\" x=\"16\" y=\"{}\">{}</text>\n", Num(bar_y + 13),
                        Escape(LaneTitle(lane)));
    body += fmt::format("<text class=\"pid\" x=\"16\" y=\"{}\">pid {}</text>\n", Num(bar_y + 27),
                        lane.pid);
    body += bars + waits + marks;
    for (const Placed& p : placed) {
      const Label& l = p.label;
      if (p.row < 0) {
        body += fmt::format("<text class=\"{}\" x=\"{}\" y=\"{}\">{}</text>\n", l.css,
                            Num(p.left + 2), Num(bar_y + 13), Escape(p.lines.front()));
        continue;
      }
      double baseline = rows_top + p.row * kRowHeight + 10;
      body += fmt::format("<line class=\"leader\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n",
                          Num(l.x), Num(bar_y + kBarHeight), Num(baseline - 9));
      for (const std::string& line : p.lines) {
        body += fmt::format("<text class=\"{}\" x=\"{}\" y=\"{}\">{}</text>\n", l.css,
                            Num(p.left + 2), Num(baseline), Escape(line));
        baseline += kRowHeight;
      }
    }
    y += lane_height;
  }

  // The axis: grid lines behind the lanes, ticks and labels under them.
  double lo_ms = scale.lo_us / 1000.0, hi_ms = scale.hi_us / 1000.0;
  double step = NiceStep(hi_ms - lo_ms, 8);
  std::string grid;
  std::string axis = fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n",
                                 Num(kPlotLeft), Num(y + 4), Num(kPlotRight), Num(y + 4));
  for (double t = std::ceil(lo_ms / step) * step; t <= hi_ms + 1e-9; t += step) {
    double x = scale.X(static_cast<int64_t>(std::llround(t * 1000)));
    grid += fmt::format("<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n",
                        Num(x), Num(lanes_top), Num(y + 4));
    axis += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n",
                        Num(x), Num(y + 4), Num(y + 9));
    axis += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\">{}</text>\n", Num(x), Num(y + 21),
                        FormatMs(t, step));
  }
  axis += fmt::format("<text class=\"pid\" x=\"16\" y=\"{}\">ms since the run began</text>\n",
                      Num(y + 21));
  s += backgrounds + grid + body + axis;
  out.height = y + 34 - top;
  return out;
}

// The key to the drawing, in rows of items; sets *height.
std::string Legend(double top, double* height) {
  std::string s;
  double x = 16, y = top;
  auto item = [&](const std::function<std::string(double, double)>& swatch,
                  const std::string& text) {
    double width = 30 + TextWidth(text) + 18;
    if (x + width > kWidth - 8) {
      x = 16;
      y += 24;
    }
    s += swatch(x, y);
    s += fmt::format("<text class=\"label\" x=\"{}\" y=\"{}\">{}</text>\n", Num(x + 30),
                     Num(y + 13), Escape(text));
    x += width;
  };
  auto bar = [](const char* css, double w) {
    return [css, w](double bx, double by) {
      return fmt::format(
          "<rect class=\"bar {}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"14\" rx=\"2\"/>\n", css,
          Num(bx + 24 - w), Num(by + 2), Num(w));
    };
  };
  auto glyph = [](Mark::Kind kind, double dy) {
    return [kind, dy](double gx, double gy) { return Glyph(kind, gx + 12, gy + dy); };
  };
  item(bar("commit", 24), "transaction committed");
  item(bar("rollback", 24), "rolled back");
  item(bar("died", 24), "its process died inside");
  item(bar("auto", kAutocommitBar), "autocommit statement");
  item(
      [](double wx, double wy) {
        return fmt::format("<rect class=\"wait\" x=\"{}\" y=\"{}\" width=\"24\" height=\"10\"/>\n",
                           Num(wx), Num(wy + 4));
      },
      "waits for the write lock");
  item(glyph(Mark::Kind::kDelivery, 6), "delivery");
  item(glyph(Mark::Kind::kHook, 9), "hook point");
  item(glyph(Mark::Kind::kCrash, 0), "crash");
  item(glyph(Mark::Kind::kDied, 0), "process death seen");
  item(glyph(Mark::Kind::kRecover, 0), "recovery");
  item(glyph(Mark::Kind::kSend, 0), "email sent");
  *height = y + 24 - top;
  return s;
}

constexpr const char* kStyle = R"svg(<style>
text { font-family: 'DejaVu Sans Mono', Menlo, Consolas, monospace; font-size: 11px; fill: #222; }
.title { font-family: 'DejaVu Sans', Verdana, Arial, sans-serif; font-size: 20px; font-weight: bold; }
.subtitle { font-family: 'DejaVu Sans', Verdana, Arial, sans-serif; font-size: 12px; fill: #555; }
.section { font-family: 'DejaVu Sans', Verdana, Arial, sans-serif; font-size: 16px; font-weight: bold; }
.line { font-size: 12.5px; fill: #000; }
.lane { font-family: 'DejaVu Sans', Verdana, Arial, sans-serif; font-size: 13px; font-weight: bold; }
.pid, .tick { fill: #666; font-size: 10px; }
.tick { text-anchor: middle; }
.lane-bg { fill: #f6f7f9; }
.grid { stroke: #e2e4e8; stroke-width: 1; }
.axis { stroke: #888; stroke-width: 1; }
.bar { stroke-width: 1.5; }
.bar.commit { fill: #c8e6c9; stroke: #2e7d32; }
.bar.rollback { fill: #ffe0b2; stroke: #e65100; }
.bar.died { fill: #ffcdd2; stroke: #b71c1c; stroke-dasharray: 5 3; }
.bar.open { fill: #eeeeee; stroke: #616161; stroke-dasharray: 5 3; }
.bar.auto { fill: #90caf9; stroke: #1565c0; }
.step { stroke: #1b5e20; stroke-width: 1; }
.inbar { fill: #1b3a1c; }
.wait { fill: url(#hatch); stroke: #c62828; stroke-width: 1.5; }
.leader { stroke: #b0b4ba; stroke-width: 1; }
.commit-label { fill: #2e7d32; font-weight: bold; }
.rollback-label { fill: #e65100; font-weight: bold; }
.died-label, .crash-label, .failure-label { fill: #b71c1c; font-weight: bold; }
.wait-label { fill: #c62828; }
.hook-label { fill: #455a64; }
.delivery-label { fill: #283593; }
.send-label { fill: #6a1b9a; }
.recover-label { fill: #0d47a1; }
.crash-mark { stroke: #b71c1c; stroke-width: 3; fill: none; }
.died-mark { fill: #212121; }
.hook-mark { fill: #455a64; }
.send-mark { fill: #8e24aa; }
.recover-mark { fill: #1e88e5; stroke: #0d47a1; }
.delivery-mark { stroke: #283593; stroke-width: 1.5; fill: none; }
</style>
<defs>
<pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
<rect width="6" height="6" fill="#ffebee"/>
<line x1="0" y1="0" x2="0" y2="6" stroke="#e53935" stroke-width="3"/>
</pattern>
</defs>
)svg";

}  // namespace

std::string SvgTimeline(const std::vector<TimelineSection>& sections) {
  std::string body;
  double y = 64;
  for (const TimelineSection& section : sections) {
    SectionOut out = DrawSection(section, y);
    body += out.svg;
    y += out.height + 16;
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
  svg += "<text class=\"title\" x=\"16\" y=\"30\">dedupsim timeline</text>\n";
  svg +=
      "<text class=\"subtitle\" x=\"16\" y=\"50\">one lane per consumer instance and process; "
      "bars are transactions (BEGIN to COMMIT or ROLLBACK); time as --trace stamps it</text>\n";
  svg += body;
  svg += "</svg>\n";
  return svg;
}

}  // namespace dedupsim
