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

std::string TagColumn(std::string_view tag) {
  // A tag too long for the column keeps one space after it.
  std::string bracketed = fmt::format("[{}]", tag);
  return bracketed.size() >= 21 ? bracketed + " " : fmt::format("{:<21}", bracketed);
}

const char* CsBool(bool value) { return value ? "True" : "False"; }

std::string DeliveredPhrase(int deliveries) {
  if (deliveries == 1) return "delivered once";
  if (deliveries == 2) return "delivered twice";
  return fmt::format("delivered {} times", deliveries);
}

}  // namespace dedupsim
