// FormatTimestamp (clock.h) for a hot path: writes into its own buffer, allocates nothing,
// and keeps the text of the last second it formatted, so gmtime runs once per second and
// each call writes only the milliseconds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/clock.h"

namespace dedupsim {

// One per thread (or per consumer); not thread-safe.
class TimestampFormatter {
 public:
  // The text of t, e.g. 2026-11-30T22:41:04.123Z, valid until the next call.
  std::string_view Format(TimePoint t);

 private:
  int64_t second_ = INT64_MIN;  // the second whose text is in text_
  size_t length_ = 0;           // of "2026-11-30T22:41:04", before the milliseconds
  char text_[48] = {};
};

}  // namespace dedupsim
