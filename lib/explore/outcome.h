// What a schedule ended with, judged against the invariants: each subscriber applies its
// effect exactly once per logical order (the stock reserved once, one email sent), or
// flags the case for reconciliation; never twice silently, never none silently.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace dedupsim::explore {

enum class Outcome {
  kOnce,       // every effect happened exactly once, nothing flagged
  kTwice,      // an effect happened more than once, and nobody was told
  kLost,       // an effect never happened, though its message was acked
  kReconcile,  // a delivery returned NeedsReconciliation: flagged for a person
  kDeadlock,   // every live instance waited for a lock another held
  kError,      // a message was given up after repeated database errors, or a step limit
};

inline constexpr size_t kOutcomeCount = 6;
using OutcomeCounts = std::array<int64_t, kOutcomeCount>;

std::string_view ToString(Outcome outcome);  // "once", "twice", ...
inline size_t Index(Outcome outcome) { return static_cast<size_t>(outcome); }
inline Outcome OutcomeAt(size_t index) { return static_cast<Outcome>(index); }

// Not "once": counted in a cell's ×N, and a counterexample candidate.
inline bool IsFailing(Outcome outcome) { return outcome != Outcome::kOnce; }
// Breaks the invariant outright. A reconcile does not: it is the flag the invariant asks
// for when the consumer cannot know; --expect-safe accepts it.
inline bool BreaksInvariant(Outcome outcome) {
  return outcome != Outcome::kOnce && outcome != Outcome::kReconcile;
}

// The worse of two outcomes: deadlock, error, twice, lost, reconcile, once.
Outcome Worse(Outcome a, Outcome b);

// One subscriber and one order: applied times, whether a delivery flagged it, whether any
// delivery of it returned (was acked).
Outcome Classify(int64_t applied, bool flagged, bool acked);

}  // namespace dedupsim::explore
