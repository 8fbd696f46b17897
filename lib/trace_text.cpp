#include "trace_text.h"

#include <fmt/format.h>

namespace dedupsim {

std::string FormatTraceLine(const TraceEvent& e) {
  std::string who = e.instance.empty() ? "-" : e.instance;
  std::string result = e.result;
  if (e.busy_calls > 0) {
    result += fmt::format(" (waited {:.1f} ms, {} busy calls)", static_cast<double>(e.waited_us) / 1000.0,
                          e.busy_calls);
  }
  return fmt::format("{:>9.1f} ms  {} pid {:<7} {:<6} {:<60}  {}", static_cast<double>(e.at_us) / 1000.0,
                     who, e.pid, e.kind, e.detail, result);
}

std::string FormatTrace(const std::vector<TraceEvent>& events) {
  std::string out;
  for (const TraceEvent& e : events) {
    out += FormatTraceLine(e);
    out += '\n';
  }
  return out;
}

}  // namespace dedupsim
