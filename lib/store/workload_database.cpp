#include "store/workload_database.h"

#include <cstdio>

namespace dedupsim {

// gmtime_r and the text of the date and time of day once per second, then three digits of
// milliseconds.
const char* RawStamp::Now() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  if (ts.tv_sec != second) {
    tm utc{};
    gmtime_r(&ts.tv_sec, &utc);
    std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.000Z", utc.tm_year + 1900,
                  utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec);
    second = ts.tv_sec;
  }
  const auto millis = static_cast<unsigned>(ts.tv_nsec / 1000000);
  text[20] = static_cast<char>('0' + millis / 100);
  text[21] = static_cast<char>('0' + millis / 10 % 10);
  text[22] = static_cast<char>('0' + millis % 10);
  return text;
}

}  // namespace dedupsim
