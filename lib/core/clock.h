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

// A clock for repeatable runs (run --seed, the docs' pages): it starts at kSteppingStart and
// each reading is one millisecond after the one before, so a run that reads the clock in the
// same order reads the same times, whatever the machine. The count is kept in memory mapped
// shared before any fork, so a child process's readings (a crashing delivery, an instance
// in a process of its own) take their turn in the same count. Safe for concurrent use.
class SteppingClock final : public Clock {
 public:
  static constexpr std::chrono::sys_seconds kSteppingStart{
      std::chrono::sys_days{std::chrono::year{2030} / 1 / 7} + std::chrono::hours(9)};
  SteppingClock();
  ~SteppingClock() override;
  SteppingClock(const SteppingClock&) = delete;
  SteppingClock& operator=(const SteppingClock&) = delete;
  TimePoint Now() override;

 private:
  int64_t* count_;  // readings so far, shared with forked children
};

// ISO 8601 in UTC with milliseconds, e.g. 2026-11-30T22:41:04.123Z: sorts as text.
std::string FormatTimestamp(TimePoint t);

}  // namespace dedupsim
