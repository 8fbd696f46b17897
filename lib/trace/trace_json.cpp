#include "trace/trace_json.h"

namespace dedupsim {

nlohmann::ordered_json EventToJson(const TraceEvent& e) {
  nlohmann::ordered_json j;
  j["atUs"] = e.at_us;
  j["instance"] = e.instance;
  j["pid"] = e.pid;
  j["kind"] = e.kind;
  j["detail"] = e.detail;
  j["result"] = e.result;
  j["waitedUs"] = e.waited_us;
  if (e.busy_calls) j["busyCalls"] = *e.busy_calls;  // only where a busy handler counted
  j["actor"] = ActorOf(e);
  j["op"] = e.op;
  j["table"] = e.table;
  j["target"] = e.target;
  j["key"] = e.key;
  j["delivery"] = e.delivery;
  if (e.copy > 0) j["copy"] = e.copy;  // only where the broker said
  j["rows"] = e.rows;
  j["value"] = e.value;
  if (e.replaced > 0) j["replaced"] = e.replaced;  // only where it happened
  if (e.updated > 0) j["updated"] = e.updated;     // an upsert's rows that updated, seen
  if (e.inserted_or_updated) j["insertedOrUpdated"] = true;  // which one, not known
  if (e.unchanged > 0) j["unchanged"] = e.unchanged;  // updated to the values they held
  j["error"] = e.error;
  j["waitedOn"] = e.waited_on;
  j["lockMode"] = e.lock_mode;
  j["waitEvent"] = e.wait_event;
  j["blockedBy"] = e.blocked_by;
  if (e.backend != 0) j["backend"] = e.backend;  // only a server connection's steps
  if (e.seen_us >= 0) j["seenUs"] = e.seen_us;    // only a wait the server dated
  j["incarnation"] = e.incarnation;
  j["verdict"] = e.verdict;
  j["seq"] = e.seq;
  return j;
}

nlohmann::ordered_json EventsToJson(const std::vector<TraceEvent>& events) {
  nlohmann::ordered_json array = nlohmann::ordered_json::array();
  for (const auto& e : events) array.push_back(EventToJson(e));
  return array;
}

std::vector<TraceEvent> EventsFromJson(const nlohmann::json& array) {
  std::vector<TraceEvent> events;
  if (!array.is_array()) return events;
  for (const auto& j : array) {
    TraceEvent e;
    e.at_us = j.value("atUs", int64_t{0});
    e.instance = j.value("instance", std::string());
    e.pid = j.value("pid", 0);
    e.kind = j.value("kind", std::string());
    e.detail = j.value("detail", std::string());
    e.result = j.value("result", std::string());
    e.waited_us = j.value("waitedUs", int64_t{0});
    if (j.contains("busyCalls")) e.busy_calls = j["busyCalls"].get<int64_t>();
    e.actor = j.value("actor", std::string());
    e.op = j.value("op", std::string());
    e.table = j.value("table", std::string());
    e.target = j.value("target", std::string());
    e.key = j.value("key", std::string());
    e.delivery = j.value("delivery", 0);
    e.copy = j.value("copy", 0);
    e.rows = j.value("rows", int64_t{-1});
    e.value = j.value("value", std::string());
    e.replaced = j.value("replaced", int64_t{0});
    e.updated = j.value("updated", int64_t{0});
    e.inserted_or_updated = j.value("insertedOrUpdated", false);
    e.unchanged = j.value("unchanged", int64_t{0});
    e.error = j.value("error", std::string());
    e.waited_on = j.value("waitedOn", std::string());
    e.lock_mode = j.value("lockMode", std::string());
    e.wait_event = j.value("waitEvent", std::string());
    e.blocked_by = j.value("blockedBy", 0);
    e.backend = j.value("backend", 0);
    e.seen_us = j.value("seenUs", int64_t{-1});
    e.incarnation = j.value("incarnation", 0);
    e.verdict = j.value("verdict", std::string());
    e.seq = j.value("seq", int64_t{0});
    events.push_back(std::move(e));
  }
  return events;
}

}  // namespace dedupsim
