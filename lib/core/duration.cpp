#include "core/duration.h"

#include <cstdint>
#include <utility>

#include <fmt/format.h>

namespace dedupsim {

namespace {

constexpr int64_t kSecond = 1000;
constexpr int64_t kMinute = 60 * kSecond;
constexpr int64_t kHour = 60 * kMinute;
constexpr int64_t kDay = 24 * kHour;
constexpr int64_t kLongest = 36525 * kDay;  // 100 years: far past any retention or window
static_assert(kLongest == std::chrono::milliseconds(kLongestDuration).count());

}  // namespace

std::optional<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  if (text.size() < 2) return std::nullopt;
  int64_t unit = 0;
  switch (text.back()) {
    case 'd':
      unit = kDay;
      break;
    case 'h':
      unit = kHour;
      break;
    case 'm':
      unit = kMinute;
      break;
    case 's':
      unit = kSecond;
      break;
    default:
      return std::nullopt;
  }
  int64_t count = 0;
  for (char c : text.substr(0, text.size() - 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    count = count * 10 + (c - '0');
    if (count * unit > kLongest) return std::nullopt;  // also stops overflow
  }
  return std::chrono::milliseconds(count * unit);
}

std::string DurationProblem(std::string_view text) {
  if (ParseDuration(text)) return "";
  const bool shaped =
      text.size() >= 2 && std::string_view("dhms").find(text.back()) != std::string_view::npos &&
      text.substr(0, text.size() - 1).find_first_not_of("0123456789") == std::string_view::npos;
  if (shaped) {
    return fmt::format("{}: longer than the limit of {}d (100 years)", text,
                       kLongestDuration.count());
  }
  return fmt::format("not a duration like 14d, 36h, 90m or 30s: {}", text);
}

std::string FormatDuration(std::chrono::milliseconds d) {
  int64_t ms = d.count();
  if (ms == 0) return "0s";
  for (auto [unit, suffix] : {std::pair{kDay, 'd'}, std::pair{kHour, 'h'}, std::pair{kMinute, 'm'},
                              std::pair{kSecond, 's'}}) {
    if (ms != 0 && ms % unit == 0) return fmt::format("{}{}", ms / unit, suffix);
  }
  return fmt::format("{}ms", ms);
}

}  // namespace dedupsim
