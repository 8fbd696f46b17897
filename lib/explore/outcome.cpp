#include "explore/outcome.h"

#include <string>

#include "explore/plan.h"

namespace dedupsim::explore {

std::string_view ToString(Outcome outcome) {
  switch (outcome) {
    case Outcome::kOnce:
      return "once";
    case Outcome::kTwice:
      return "twice";
    case Outcome::kLost:
      return "lost";
    case Outcome::kReconcile:
      return "reconcile";
    case Outcome::kDeadlock:
      return "deadlock";
    case Outcome::kError:
      return "error";
    case Outcome::kWrong:
      return "wrong";
  }
  return "?";
}

namespace {

int Severity(Outcome o) {
  switch (o) {
    case Outcome::kOnce:
      return 0;
    case Outcome::kReconcile:
      return 1;
    case Outcome::kLost:
      return 2;
    case Outcome::kWrong:
      return 3;
    case Outcome::kTwice:
      return 4;
    case Outcome::kError:
      return 5;
    case Outcome::kDeadlock:
      return 6;
  }
  return 0;
}

}  // namespace

Outcome Worse(Outcome a, Outcome b) { return Severity(b) > Severity(a) ? b : a; }

Outcome Classify(int64_t applied, bool flagged, bool acked, bool given_up) {
  // Dead-lettered: the broker gave up on a delivery of it, whatever the others did.
  if (given_up) return Outcome::kError;
  if (flagged) return Outcome::kReconcile;  // whatever happened, a person was told
  if (applied == kNotWhole) return Outcome::kWrong;
  if (applied > 1) return Outcome::kTwice;
  if (applied == 1) return Outcome::kOnce;
  return acked ? Outcome::kLost : Outcome::kError;
}

std::string InstanceName(int index) { return std::string(1, static_cast<char>('A' + index)); }

}  // namespace dedupsim::explore
