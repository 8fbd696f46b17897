#include "views/svg_timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
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

// Where a time goes on the plot. On a time axis, linear in microseconds; on a logical
// axis (scenarios driven by a manual clock, whose real times mean nothing), each distinct
// time stamp is one step, evenly spaced.
struct Scale {
  double lo_us = 0;
  double hi_us = 1;
  std::vector<int64_t> steps;  // logical axis: the distinct stamps, sorted
  bool logical() const { return !steps.empty(); }
  double Pos(int64_t us) const {
    if (!logical()) return static_cast<double>(us);
    auto it = std::lower_bound(steps.begin(), steps.end(), us);
    return static_cast<double>(it - steps.begin());
  }
  double X(int64_t us) const {
    return kPlotLeft + (Pos(us) - lo_us) / (hi_us - lo_us) * (kPlotRight - kPlotLeft);
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

// Labels at one point, placed together: one line each (long ones wrapped), one leader.
struct Placed {
  double x = 0;                                            // the point, where the leader is
  std::vector<std::pair<std::string, std::string>> lines;  // text and class
  double left = 0;
  int row = 0;  // the first row; -1: the bar row
};

// Long texts (a recovery's account) are wrapped into lines of at most this many chars.
constexpr size_t kLabelChars = 72;

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
  const size_t end = word.find_first_of(",;:)");
  word = word.substr(0, end);
  return word == "ms" || word == "bytes";
}

// Wrapped at spaces, never between a figure and its unit ("130.3 ms" stays on one line).
std::vector<std::string> WrapLabel(const std::string& text, size_t chars = kLabelChars) {
  std::vector<std::string> lines;
  std::string line;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    if (end < text.size() && IsFigure(std::string_view(text).substr(start, end - start))) {
      size_t unit_end = text.find(' ', end + 1);
      if (unit_end == std::string::npos) unit_end = text.size();
      if (IsUnit(std::string_view(text).substr(end + 1, unit_end - end - 1))) end = unit_end;
    }
    std::string word = text.substr(start, end - start);
    if (!line.empty() && line.size() + 1 + word.size() > chars) {
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
  // No span of the row comes within pad of [left, right].
  bool Free(int row, double left, double right, double pad = 6) const {
    auto it = taken_.find(row);
    if (it == taken_.end()) return true;
    for (auto [l, r] : it->second) {
      if (left < r + pad && l < right + pad) return false;
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

// Places each label where it overlaps no other label, no leader line and no bar. A label
// may sit on the bar's row right of its bar (the end of a transaction); the others hang
// below the bar on a leader line, the text ending at the line (or, near the left edge,
// starting at it), in the first rows where neither the text nor the leader's path through
// the rows above meets anything. Labels at the same point share one leader, a line each.
std::vector<Placed> PlaceLabels(std::vector<Label> labels, Rows& rows, bool prefer_start = false) {
  std::stable_sort(labels.begin(), labels.end(),
                   [](const Label& a, const Label& b) { return a.x < b.x; });
  std::vector<Placed> placed;
  std::vector<Placed> hanging;
  for (const Label& label : labels) {
    std::vector<std::string> lines = WrapLabel(label.text);
    if (label.on_bar_row && lines.size() == 1) {
      const double width = TextWidth(lines.front());
      const double left = label.bar_right + 8;
      if (left + width <= kWidth - 8 && rows.Free(-1, left, left + width)) {
        rows.Take(-1, left, left + width);
        placed.push_back({label.x, {{lines.front(), label.css}}, left, -1});
        continue;
      }
    }
    if (!hanging.empty() && label.x - hanging.back().x < 3) {
      for (const std::string& line : lines) hanging.back().lines.push_back({line, label.css});
      continue;
    }
    Placed p;
    p.x = label.x;
    for (const std::string& line : lines) p.lines.push_back({line, label.css});
    hanging.push_back(std::move(p));
  }
  constexpr int kMaxRows = 400;
  for (Placed& p : hanging) {
    // Too wide to end at its leader (near the left edge): wrapped narrower, so that it
    // does not have to start there and cover the leaders of the labels after it.
    if (!prefer_start) {
      double widest = 0;
      for (const auto& line : p.lines) widest = std::max(widest, TextWidth(line.first));
      const double room = p.x - 1 - 8;
      const size_t chars = room > 4 ? static_cast<size_t>((room - 4) / kCharWidth) : 0;
      if (widest > room && chars >= 12) {
        std::vector<std::pair<std::string, std::string>> narrow;
        for (const auto& [line, css] : p.lines) {
          for (const std::string& part : WrapLabel(line, chars)) narrow.push_back({part, css});
        }
        p.lines = std::move(narrow);
      }
    }
    double width = 0;
    for (const auto& line : p.lines) width = std::max(width, TextWidth(line.first));
    const int n = static_cast<int>(p.lines.size());
    auto fits = [&](double left, int first, bool leader_too) {
      for (int r = first; r < first + n; ++r) {
        if (!rows.Free(r, left, left + width)) return false;
      }
      for (int r = 0; leader_too && r < first; ++r) {
        if (!rows.Free(r, p.x - 0.5, p.x + 0.5, 1)) return false;
      }
      return true;
    };
    std::vector<double> lefts;
    if (p.x - 1 - width >= 8) lefts.push_back(p.x - 1 - width);  // ending at the leader
    if (p.x + 1 + width <= kWidth - 8) {
      lefts.insert(prefer_start ? lefts.begin() : lefts.end(), p.x + 1);  // starting at it
    }
    if (lefts.empty()) lefts.push_back(std::clamp(p.x - width / 2, 8.0, kWidth - 8 - width));
    int best_row = kMaxRows;
    double best_left = lefts.front();
    // The first side that has room at all, however deep: ending at the leader keeps the
    // text off the leaders of the labels to its right.
    for (double left : lefts) {
      int row = 0;
      while (row < kMaxRows && !fits(left, row, true)) ++row;
      if (row < kMaxRows) {
        best_row = row;
        best_left = left;
        break;
      }
    }
    if (best_row == kMaxRows) {  // nowhere without a crossing: at least no overlap
      best_row = 0;
      while (!fits(best_left, best_row, false)) ++best_row;
    }
    p.left = best_left;
    p.row = best_row;
    for (int r = best_row; r < best_row + n; ++r) rows.Take(r, best_left, best_left + width);
    for (int r = 0; r < best_row + n; ++r) rows.Take(r, p.x - 0.5, p.x + 0.5);
    placed.push_back(std::move(p));
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
    if (skip_control && step.control) continue;
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
    case Mark::Kind::kOutcome:
      return "outcome";
    case Mark::Kind::kBroker:
      return "broker";
    case Mark::Kind::kOther:
      break;
  }
  return "note";
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
    case Mark::Kind::kOutcome:
      return fmt::format(
          "<rect class=\"outcome-mark\" x=\"{}\" y=\"{}\" width=\"4\" height=\"{}\"/>\n",
          Num(x - 2), Num(y), Num(kBarHeight));
    case Mark::Kind::kBroker:
      return fmt::format("<circle class=\"broker-mark\" cx=\"{}\" cy=\"{}\" r=\"4\"/>\n", Num(x),
                         Num(mid));
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

// The span of real time a section's steps cover, in microseconds (0: a logical axis).
double SectionSpanUs(const std::vector<TraceEvent>& events) {
  bool logical = false;
  int64_t lo = 0, hi = 0;
  bool any = false;
  for (const TraceEvent& e : events) {
    if (e.kind == "clock") logical = true;
    if (LaneKey(e).empty() && e.kind != "part") continue;
    if (!any) lo = hi = e.at_us;
    any = true;
    lo = std::min(lo, e.at_us);
    hi = std::max(hi, e.at_us);
  }
  if (logical || !any) return 0;
  return static_cast<double>(hi - lo);
}

SectionOut DrawSection(const TimelineSection& section, double top, double common_span_us) {
  SectionOut out;
  std::string& s = out.svg;
  double y = top;
  s += fmt::format("<text class=\"section\" x=\"16\" y=\"{}\">{}</text>\n", Num(y + 18),
                   Escape(section.scenario));
  y += 24;
  // The scenario's line, wrapped to the drawing's width (12.5 px monospace).
  for (const std::string& line : WrapLabel(section.line, static_cast<size_t>((kWidth - 40) / 7.6))) {
    s += fmt::format("<text class=\"line\" x=\"16\" y=\"{}\">{}</text>\n", Num(y + 14),
                     Escape(line));
    y += 17;
  }
  y += 12;

  ShortIds ids(section.events);
  std::vector<Lane> lanes = BuildLanes(section.events, ids);
  if (lanes.empty()) {
    s += fmt::format("<text class=\"note\" x=\"{}\" y=\"{}\">no steps were recorded</text>\n",
                     Num(kPlotLeft), Num(y + 14));
    out.height = y + 30 - top;
    return out;
  }

  Scale scale;
  std::vector<const TraceEvent*> clocks, parts;
  for (const TraceEvent& e : section.events) {
    if (e.kind == "clock") clocks.push_back(&e);
    if (e.kind == "part") parts.push_back(&e);
  }
  if (!clocks.empty()) {
    for (const TraceEvent& e : section.events) scale.steps.push_back(e.at_us);
    std::sort(scale.steps.begin(), scale.steps.end());
    scale.steps.erase(std::unique(scale.steps.begin(), scale.steps.end()), scale.steps.end());
    const double n = static_cast<double>(scale.steps.size());
    scale.lo_us = -0.02 * n - 0.5;
    scale.hi_us = n - 1 + 0.03 * n + 0.5;
  } else {
    int64_t lo = lanes.front().first_us, hi = lanes.front().last_us;
    for (const Lane& lane : lanes) {
      lo = std::min(lo, lane.first_us);
      hi = std::max(hi, lane.last_us);
      for (const Span& span : lane.spans) hi = std::max(hi, span.end_us);
    }
    for (const TraceEvent* p : parts) lo = std::min(lo, p->at_us);
    double range = std::max<double>(static_cast<double>(hi - lo), 1000.0);
    // One scale for every section of the drawing: the longest section's.
    range = std::max(range, common_span_us);
    scale.lo_us = static_cast<double>(lo) - 0.03 * range;
    scale.hi_us = static_cast<double>(lo) + 1.04 * range;
  }

  // Sub-run titles, each above the lanes where it begins, in rows of their own.
  std::string part_marks;
  if (!parts.empty()) {
    Rows rows;
    std::vector<Label> labels;
    for (const TraceEvent* p : parts)
      labels.push_back({scale.X(p->at_us), "▸ " + p->detail, "part-label", false, 0});
    std::vector<Placed> done = PlaceLabels(labels, rows, true);
    for (const Placed& p : done) {
      double line_y = y + 11 + p.row * kRowHeight;
      for (const auto& [line, css] : p.lines) {
        part_marks += fmt::format("<text class=\"{}\" x=\"{}\" y=\"{}\">{}</text>\n", css,
                                  Num(p.left + 2), Num(line_y), Escape(line));
        line_y += kRowHeight;
      }
    }
    y += rows.count() * kRowHeight + 4;
  }
  const double lanes_top = y;

  std::string backgrounds;  // drawn first, under the grid
  std::string body;
  for (size_t li = 0; li < lanes.size(); ++li) {
    const Lane& lane = lanes[li];
    Rows rows;
    rows.Take(0, 8, kPlotLeft - 30);  // the pid (or "not a consumer step") under the lane's name
    std::vector<Label> labels;
    std::string bars;
    const double bar_y = y + kBarTop;

    // Marks drawn on the bar row: text inside a bar must not run under them.
    std::vector<double> glyphs;
    for (const Mark& mark : lane.marks) {
      if (mark.kind != Mark::Kind::kHook && mark.kind != Mark::Kind::kDelivery) {
        glyphs.push_back(scale.X(mark.at_us));
      }
    }
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
        labels.push_back(
            {x1,
             span.steps.front().statement + ": " +
                 (span.steps.front().result.empty() ? "ok" : span.steps.front().result),
             "label", false, 0});
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
      const double text_right = x0 + 4 + TextWidth(content);
      const bool covered = std::any_of(glyphs.begin(), glyphs.end(),
                                       [&](double g) { return g + 8 > x0 && g - 8 < text_right; });
      if (x1 - x0 >= TextWidth(content) + 6 && !covered) {
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
      rows.Take(-1, x0, x1);
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
      if (mark.kind != Mark::Kind::kHook && mark.kind != Mark::Kind::kDelivery) {
        rows.Take(-1, x - 7, x + 7);  // its glyph sits on the bar row
      }
      marks += Glyph(mark.kind, x, bar_y);
      std::string css = MarkClass(mark.kind) + "-label";
      if (mark.bad) css += " bad";
      labels.push_back({x, mark.text, css, false, 0});
    }

    std::vector<Placed> placed = PlaceLabels(labels, rows);
    const double rows_top = bar_y + kBarHeight + 6;
    const double lane_height = kBarTop + kBarHeight + 6 + rows.count() * kRowHeight + 8;
    const std::string bg = lane.secondary ? "lane-bg secondary" : "lane-bg";
    if (li % 2 == 0 || lane.secondary) {
      backgrounds +=
          fmt::format("<rect class=\"{}\" x=\"8\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", bg,
                      Num(y), Num(kWidth - 16), Num(lane_height));
    }
    body +=
        fmt::format("<g class=\"{}\">\n", lane.secondary ? "lane-group secondary" : "lane-group");
    body += fmt::format("<text class=\"lane{}\" x=\"16\" y=\"{}\">{}</text>\n",
                        lane.secondary ? " secondary" : "", Num(bar_y + 13), Escape(lane.title));
    if (lane.actor == kActorConsumer || lane.secondary) {
      body += fmt::format("<text class=\"pid\" x=\"16\" y=\"{}\">{}</text>\n", Num(bar_y + 27),
                          lane.secondary ? "not a consumer step" : fmt::format("pid {}", lane.pid));
    }
    body += bars + waits + marks;
    for (const Placed& p : placed) {
      if (p.row < 0) {
        body +=
            fmt::format("<text class=\"{}\" x=\"{}\" y=\"{}\">{}</text>\n", p.lines.front().second,
                        Num(p.left + 2), Num(bar_y + 13), Escape(p.lines.front().first));
        continue;
      }
      double baseline = rows_top + p.row * kRowHeight + 10;
      body +=
          fmt::format("<line class=\"leader\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n",
                      Num(p.x), Num(bar_y + kBarHeight),
                      Num(baseline - 4 + (static_cast<double>(p.lines.size()) - 1) * kRowHeight));
      for (const auto& [line, css] : p.lines) {
        body += fmt::format("<text class=\"{}\" x=\"{}\" y=\"{}\">{}</text>\n", css,
                            Num(p.left + 2), Num(baseline), Escape(line));
        baseline += kRowHeight;
      }
    }
    body += "</g>\n";
    y += lane_height;
  }

  std::string grid;
  // Sub-runs: a dashed line from the title down through the lanes.
  for (const TraceEvent* p : parts) {
    double x = scale.X(p->at_us);
    grid += fmt::format("<line class=\"part\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n",
                        Num(x), Num(lanes_top - 4), Num(y + 4));
  }
  std::string axis = fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n",
                                 Num(kPlotLeft), Num(y + 4), Num(kPlotRight), Num(y + 4));
  if (scale.logical()) {
    // Steps in order; the simulated time written where the scenario set its clock, as
    // long as the labels do not run into each other.
    double free_from = 16 + 24 * 6.1 + 8;  // after the axis caption
    for (const TraceEvent* c : clocks) {
      double x = scale.X(c->at_us);
      grid += fmt::format("<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n",
                          Num(x), Num(lanes_top), Num(y + 4));
      axis += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n",
                          Num(x), Num(y + 4), Num(y + 9));
      const double w = static_cast<double>(c->detail.size()) * 6.1;
      if (x - w / 2 >= free_from && x + w / 2 <= kWidth - 8) {
        axis += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\">{}</text>\n", Num(x),
                            Num(y + 21), Escape(c->detail));
        free_from = x + w / 2 + 8;
      }
    }
    axis += fmt::format("<text class=\"pid\" x=\"16\" y=\"{}\">steps (simulated clock)</text>\n",
                        Num(y + 21));
  } else {
    double lo_ms = scale.lo_us / 1000.0, hi_ms = scale.hi_us / 1000.0;
    double step = NiceStep(hi_ms - lo_ms, 8);
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
  }
  s += backgrounds + grid + part_marks + body + axis;
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
  item(glyph(Mark::Kind::kOutcome, 0), "the delivery's outcome");
  item(glyph(Mark::Kind::kBroker, 0), "broker step (send, deliver, ack, nack)");
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
.outcome-mark { fill: #2e7d32; }
.broker-mark { fill: #5d4037; }
.outcome-label { fill: #2e7d32; font-weight: bold; }
.broker-label { fill: #5d4037; }
.bad { fill: #b71c1c; font-weight: bold; }
.part { stroke: #37474f; stroke-width: 1.5; stroke-dasharray: 6 4; }
.part-label { font-weight: bold; fill: #37474f; }
.lane-bg.secondary { fill: #eceff1; }
.lane.secondary { fill: #78909c; font-style: italic; font-weight: normal; }
.secondary text { fill-opacity: 0.75; }
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
  double common_span_us = 0;  // one time scale for every section on a time axis
  for (const TimelineSection& section : sections) {
    common_span_us = std::max(common_span_us, SectionSpanUs(section.events));
  }
  for (const TimelineSection& section : sections) {
    SectionOut out = DrawSection(section, y, common_span_us);
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
      "<text class=\"subtitle\" x=\"16\" y=\"50\">one lane per actor (each consumer process, "
      "broker, producer, the scenario's own checks in grey); bars are transactions</text>\n";
  svg += body;
  svg += "</svg>\n";
  return svg;
}

}  // namespace dedupsim
