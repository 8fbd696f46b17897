#include "lesson/scenario.h"

#include <fmt/format.h>

#include <optional>
#include <stdexcept>

namespace dedupsim {

bool OnServer(const ScenarioEnv& env) { return env.backend.name() != "sqlite"; }

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

namespace {
// Judged's markers: never in a line's own text (ASCII control characters).
constexpr char kMarkCorrect = '\x01';
constexpr char kMarkWrong = '\x02';
constexpr char kMarkEnd = '\x03';
}  // namespace

std::string Judged(std::string_view text, bool correct) {
  std::string out(1, correct ? kMarkCorrect : kMarkWrong);
  out += text;
  out += kMarkEnd;
  return out;
}

std::string JudgedReserved(std::string_view title, int64_t reserved, int64_t once) {
  return Judged(fmt::format("{} reserved: {}", title, reserved), reserved == once);
}

std::string JudgedEmails(int64_t sent) {
  return Judged(fmt::format("emails sent: {}", sent), sent == 1);
}

void TakeMarks(Outcome& out) {
  std::string plain;
  plain.reserve(out.line.size());
  std::optional<FigureMark> open;
  for (char c : out.line) {
    if (c == kMarkCorrect || c == kMarkWrong) {
      open = FigureMark{plain.size(), 0, c == kMarkCorrect};
    } else if (c == kMarkEnd && open) {
      open->size = plain.size() - open->begin;
      out.marks.push_back(*open);
      open.reset();
    } else {
      plain += c;
    }
  }
  out.line = std::move(plain);
}

std::string DeliveredPhrase(int deliveries) {
  if (deliveries == 1) return "delivered once";
  if (deliveries == 2) return "delivered twice";
  return fmt::format("delivered {} times", deliveries);
}

}  // namespace dedupsim

namespace dedupsim {

std::string BrokerMisfit(const Scenario& scenario, BrokerKind kind) {
  if (kind == BrokerKind::kSimulated) return "";
  if ((scenario.traits & kRealBroker) == 0) {
    return fmt::format(
        "{} runs its deliveries through a simulated broker of its own, so it has nothing to "
        "run on --broker {}",
        scenario.name, ToString(kind));
  }
  if (scenario.refuses_broker != nullptr) {
    std::string_view why = scenario.refuses_broker(kind);
    if (!why.empty()) return fmt::format("{} cannot run on --broker {}: {}", scenario.name, ToString(kind), why);
  }
  return "";
}

}  // namespace dedupsim
