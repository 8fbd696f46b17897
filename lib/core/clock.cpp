#include "core/clock.h"

#include <sys/mman.h>
#include <time.h>

#include <atomic>
#include <cerrno>
#include <system_error>

#include <algorithm>
#include <cstdio>
#include <string>

#include "core/timestamp.h"

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

SteppingClock::SteppingClock() {
  void* memory = ::mmap(nullptr, sizeof(int64_t), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    throw std::system_error(errno, std::generic_category(), "clock: cannot map its count");
  }
  count_ = static_cast<int64_t*>(memory);  // zero-filled by mmap
}

SteppingClock::~SteppingClock() { ::munmap(count_, sizeof(int64_t)); }

TimePoint SteppingClock::Now() {
  const int64_t n = std::atomic_ref<int64_t>(*count_).fetch_add(1) + 1;
  return TimePoint(kSteppingStart) + std::chrono::milliseconds(n);
}

std::string FormatTimestamp(TimePoint t) { return std::string(TimestampFormatter().Format(t)); }

std::string_view TimestampFormatter::Format(TimePoint t) {
  const auto ms = std::chrono::floor<std::chrono::milliseconds>(t);
  const auto seconds = std::chrono::floor<std::chrono::seconds>(ms);
  const auto second = static_cast<int64_t>(seconds.time_since_epoch().count());
  if (second != second_) {
    const time_t whole = std::chrono::system_clock::to_time_t(seconds);
    tm utc{};
    gmtime_r(&whole, &utc);
    const int n =
        std::snprintf(text_, sizeof text_ - 5, "%04d-%02d-%02dT%02d:%02d:%02d", utc.tm_year + 1900,
                      utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec);
    length_ = n > 0 ? std::min(static_cast<size_t>(n), sizeof text_ - 6) : 0;
    second_ = second;
  }
  auto millis = static_cast<unsigned>((ms - seconds).count());  // 0..999
  char* out = text_ + length_;
  out[0] = '.';
  out[1] = static_cast<char>('0' + millis / 100);
  out[2] = static_cast<char>('0' + millis / 10 % 10);
  out[3] = static_cast<char>('0' + millis % 10);
  out[4] = 'Z';
  return std::string_view(text_, length_ + 5);
}

}  // namespace dedupsim
