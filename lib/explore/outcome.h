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
  kError,      // a message was given up (dead-lettered) after repeated failures, or a step limit
  kWrong,      // the effect was not the order's: another amount, another book, another column
};

inline constexpr size_t kOutcomeCount = 7;
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

// The worse of two outcomes: deadlock, error, twice, wrong, lost, reconcile, once.
Outcome Worse(Outcome a, Outcome b);

// A count of applications that is no whole number: the books reserved were not a multiple
// of the order's quantity (or could not be told apart from another order's).
inline constexpr int64_t kNotWhole = -1;

// One subscriber and one order: applied times (kNotWhole: wrong), whether a delivery
// flagged it, whether any delivery of it returned (was acked), whether one was given up
// (never acked after the broker's last attempt: dead-lettered, never once).
Outcome Classify(int64_t applied, bool flagged, bool acked, bool given_up = false);

}  // namespace dedupsim::explore
