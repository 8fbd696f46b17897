#include "scenario.h"

#include <fmt/format.h>

namespace dedupsim {

std::string_view ToString(CrashMode mode) {
  switch (mode) {
    case CrashMode::kThrow:
      return "throw";
    case CrashMode::kExit:
      return "exit";
    case CrashMode::kKill:
      return "kill";
  }
  return "throw";
}

std::string_view ToString(InstanceMode mode) {
  return mode == InstanceMode::kThreads ? "threads" : "processes";
}

// At least one space after the tag, for a tag as wide as the column.
std::string TagColumn(std::string_view tag) {
  return fmt::format("{:<20} ", fmt::format("[{}]", tag));
}

const char* CsBool(bool value) { return value ? "True" : "False"; }

std::string DeliveredPhrase(int deliveries) {
  if (deliveries == 1) return "delivered once";
  if (deliveries == 2) return "delivered twice";
  return fmt::format("delivered {} times", deliveries);
}

}  // namespace dedupsim
