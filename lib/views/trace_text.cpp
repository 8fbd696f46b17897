#include "views/trace_text.h"

#include <fmt/format.h>

#include <map>
#include <utility>

#include "views/event_text.h"
#include "views/lanes.h"
#include "views/step_text.h"

namespace dedupsim {

namespace {

// Who took a step: its instance and process, or for a consumer's settling of its delivery
// (ack, nack, a lost ack) the consumer that received it, as the pictures draw it.
struct Who {
  std::string instance;
  int pid = 0;
};

// The line, with ids as given (FormatTraceLine) or shortened (FormatTrace). A statement
// shows its SQL text; every step's words are DescribeStep's, as in the pictures.
std::string Line(const TraceEvent& e, ShortIds& ids, bool shorten, const Who& by) {
  std::string who = by.instance.empty() ? "-" : by.instance;
  WordOptions options;
  StepWords words = WordsOnLane(e, DescribeStep(e, ids, options), who);
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
    tags += "  [" + (shorten ? ids.DeliveryName(e) : fmt::format("{} delivery {}", e.key, e.delivery)) + "]";
  }
  return fmt::format("{:>9.1f} ms  {} pid {:<7} {:<60}  {}{}",
                     static_cast<double>(e.at_us) / 1000.0, who, by.pid, detail,
                     result.empty() ? "" : "→ " + result, tags);
}

}  // namespace

std::string FormatTraceLine(const TraceEvent& e) {
  ShortIds full = ShortIds::Full();
  return Line(e, full, false, Who{e.instance, e.pid});
}

std::string FormatTrace(const std::vector<TraceEvent>& recorded) {
  // In time order, a server's end of a session before the answer it let go on when both
  // are stamped in the same microsecond (the end is stamped at that answer).
  const std::vector<TraceEvent> events = ServerEndsFirst(recorded);
  ShortIds ids(events);
  std::string out;
  for (const std::string& line : ids.Legend()) out += "  message " + line + "\n";
  const std::vector<std::string> lanes = StepLaneKeys(events);
  std::map<std::string, Who> lane_owner;  // a lane's key -> the instance and process of its steps
  for (const TraceEvent& e : events) lane_owner.try_emplace(LaneKey(e), Who{e.instance, e.pid});
  for (size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    Who by{e.instance, e.pid};
    if (IsSettle(e) && lanes[i] != LaneKey(e)) by = lane_owner.at(lanes[i]);
    out += Line(e, ids, true, by);
    out += '\n';
  }
  return out;
}

}  // namespace dedupsim
