#include "trace.h"

#include <unistd.h>

#include <algorithm>

namespace dedupsim {

Recorder::Recorder() : Recorder(std::chrono::steady_clock::now()) {}

Recorder::Recorder(std::chrono::steady_clock::time_point origin) : origin_(origin) {}

int64_t Recorder::MicrosSinceOrigin() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now() - origin_)
      .count();
}

void Recorder::Record(TraceEvent event) {
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(std::move(event));
}

void Recorder::Note(const std::string& instance, const std::string& kind,
                    const std::string& detail, const std::string& result) {
  TraceEvent e;
  e.at_us = MicrosSinceOrigin();
  e.instance = instance;
  e.pid = static_cast<int>(getpid());
  e.kind = kind;
  e.detail = detail;
  e.result = result;
  Record(std::move(e));
}

std::vector<TraceEvent> Recorder::Events() const {
  std::vector<TraceEvent> copy;
  {
    std::lock_guard<std::mutex> lock(mu_);
    copy = events_;
  }
  std::stable_sort(copy.begin(), copy.end(),
                   [](const TraceEvent& a, const TraceEvent& b) { return a.at_us < b.at_us; });
  return copy;
}

void Recorder::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  events_.clear();
}

}  // namespace dedupsim
