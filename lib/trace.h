// The step trace: every statement, hook, crash and commit of every consumer instance, in
// the order it happened. Views (the --trace timeline, JSON, diagrams) are built from these
// events; nothing prints while a scenario runs. Recorder is safe for concurrent use by
// threads; events from child processes are appended by the parent after the child reports.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace dedupsim {

struct TraceEvent {
  int64_t at_us = 0;        // microseconds since the recorder's origin
  std::string instance;     // "A", "B", ... ; "" for set-up work
  int pid = 0;              // the process that did the step
  std::string kind;         // "sql", "open" (a delivery's connection), "hook", "wait",
                            // "crash", "died", "recover", "send"
  std::string detail;       // statement text, hook name, or what happened
  std::string result;       // "ok", "row", "constraint 1555", "busy", ...
  int64_t waited_us = 0;    // time spent in the busy handler during this step
  int64_t busy_calls = 0;   // busy handler calls during this step
};

class Recorder {
 public:
  Recorder();
  explicit Recorder(std::chrono::steady_clock::time_point origin);

  std::chrono::steady_clock::time_point origin() const { return origin_; }
  int64_t MicrosSinceOrigin() const;

  void Record(TraceEvent event);
  // Records an event stamped now, from this process.
  void Note(const std::string& instance, const std::string& kind, const std::string& detail,
            const std::string& result);
  std::vector<TraceEvent> Events() const;  // sorted by time, stable for ties
  void Clear();

 private:
  std::chrono::steady_clock::time_point origin_;
  mutable std::mutex mu_;
  std::vector<TraceEvent> events_;
};

}  // namespace dedupsim
