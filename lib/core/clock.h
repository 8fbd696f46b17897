// Wall-clock time for the records the consumers write (Inbox.ReceivedAt, CompletedAt).
// Injected so tests and the retention lessons can set the date; elapsed times and lock
// waits are measured with std::chrono::steady_clock, never with this clock.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

namespace dedupsim {

using TimePoint = std::chrono::system_clock::time_point;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint Now() = 0;
};

class SystemClock final : public Clock {
 public:
  TimePoint Now() override { return std::chrono::system_clock::now(); }
};

// A clock that moves only when told. Safe for concurrent use.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimePoint start) : now_(start) {}
  TimePoint Now() override;
  void Set(TimePoint t);
  void Advance(std::chrono::milliseconds by);

 private:
  std::mutex mu_;
  TimePoint now_;
};

// ISO 8601 in UTC with milliseconds, e.g. 2026-11-30T22:41:04.123Z: sorts as text.
std::string FormatTimestamp(TimePoint t);

}  // namespace dedupsim
