#include "clock.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

namespace dedupsim {

TimePoint ManualClock::Now() {
  std::lock_guard<std::mutex> lock(mu_);
  return now_;
}

void ManualClock::Set(TimePoint t) {
  std::lock_guard<std::mutex> lock(mu_);
  now_ = t;
}

void ManualClock::Advance(std::chrono::milliseconds by) {
  std::lock_guard<std::mutex> lock(mu_);
  now_ += by;
}

std::string FormatTimestamp(TimePoint t) {
  auto ms = std::chrono::time_point_cast<std::chrono::milliseconds>(t);
  auto seconds = std::chrono::time_point_cast<std::chrono::seconds>(ms);
  auto millis = (ms - seconds).count();
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03}Z", fmt::gmtime(std::chrono::system_clock::to_time_t(seconds)), millis);
}

}  // namespace dedupsim
