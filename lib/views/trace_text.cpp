#include "views/trace_text.h"

#include <fmt/format.h>

#include "views/step_text.h"

namespace dedupsim {

namespace {

// The line, with ids as given (FormatTraceLine) or shortened (FormatTrace).
std::string Line(const TraceEvent& e, ShortIds* ids) {
  std::string who = e.instance.empty() ? "-" : e.instance;
  // A read says whether it found a row; a statement that waited says how long.
  std::string result = e.kind == "sql" ? DescribeResult(e, false) : e.result;
  if (result.size() > 8 && result.compare(result.size() - 8, 8, ", waited") == 0) {
    result.resize(result.size() - 8);
  }
  if (e.busy_calls > 0) {
    result += fmt::format(" (waited {:.1f} ms, {} busy calls)",
                          static_cast<double>(e.waited_us) / 1000.0, e.busy_calls);
  }
  std::string detail = ids != nullptr ? ids->Shorten(e.detail) : e.detail;
  std::string tags;
  if (ActorOf(e) == kActorProbe) tags += "  (the scenario's check, not a consumer step)";
  if (e.delivery > 0 && e.kind != "broker") {
    tags +=
        fmt::format("  [{} delivery {}]", ids != nullptr ? ids->Name(e.key) : e.key, e.delivery);
  }
  return fmt::format("{:>9.1f} ms  {} pid {:<7} {:<6} {:<60}  {}{}",
                     static_cast<double>(e.at_us) / 1000.0, who, e.pid, e.kind, detail, result,
                     tags);
}

}  // namespace

std::string FormatTraceLine(const TraceEvent& e) { return Line(e, nullptr); }

std::string FormatTrace(const std::vector<TraceEvent>& events) {
  ShortIds ids(events);
  std::string out;
  for (const std::string& line : ids.Legend()) out += "  message " + line + "\n";
  for (const TraceEvent& e : events) {
    out += Line(e, &ids);
    out += '\n';
  }
  return out;
}

}  // namespace dedupsim
