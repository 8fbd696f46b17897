#include "views/trace_text.h"

#include <fmt/format.h>

#include "views/event_text.h"
#include "views/step_text.h"

namespace dedupsim {

namespace {

// The line, with ids as given (FormatTraceLine) or shortened (FormatTrace). A statement
// shows its SQL text; every step's words are DescribeStep's, as in the pictures.
std::string Line(const TraceEvent& e, ShortIds& ids, bool shorten) {
  std::string who = e.instance.empty() ? "-" : e.instance;
  WordOptions options;
  StepWords words = DescribeStep(e, ids, options);
  std::string detail;
  std::string result;
  if (e.kind == "sql") {
    detail = shorten ? ids.Shorten(e.detail) : e.detail;
    result = words.result;
    if (e.busy_calls > 0) result += fmt::format(" ({} busy calls)", *e.busy_calls);
  } else {
    detail = words.what;
    result = words.result;
  }
  std::string tags;
  if (ActorOf(e) == kActorProbe) tags += "  (the scenario's check, not a consumer step)";
  if (!e.verdict.empty()) tags += fmt::format("  [{} for the business]", e.verdict);
  if (e.delivery > 0 && e.kind != "broker") {
    tags += fmt::format("  [{} delivery {}]", shorten ? ids.Name(e.key) : e.key, e.delivery);
  }
  return fmt::format("{:>9.1f} ms  {} pid {:<7} {:<60}  {}{}",
                     static_cast<double>(e.at_us) / 1000.0, who, e.pid, detail,
                     result.empty() ? "" : "→ " + result, tags);
}

}  // namespace

std::string FormatTraceLine(const TraceEvent& e) {
  ShortIds full = ShortIds::Full();
  return Line(e, full, false);
}

std::string FormatTrace(const std::vector<TraceEvent>& events) {
  ShortIds ids(events);
  std::string out;
  for (const std::string& line : ids.Legend()) out += "  message " + line + "\n";
  for (const TraceEvent& e : events) {
    out += Line(e, ids, true);
    out += '\n';
  }
  return out;
}

}  // namespace dedupsim
