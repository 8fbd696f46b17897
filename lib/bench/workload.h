// The messages a bench or soak run delivers, made from a seed so a run can be repeated:
// distinct orders, each for its own book and with its own quantity, plus copies of some of
// them (the same MessageId, as a broker's redelivery or a producer's resend carries) at the
// duplicate rate, all shuffled.
//
// Each order reserves a book of its own so that the check can count, for every order, how
// many times its quantity was added: Reserved / Quantity of its book. That turns one sum
// into the two figures the lesson is about: orders doubled and orders lost.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/message.h"
#include "store/workload_database.h"

namespace dedupsim {

struct WorkloadSpec {
  int64_t messages = 20000;     // deliveries in all, duplicates included
  double duplicate_rate = 0.3;  // share of the deliveries that repeat an earlier message
  uint64_t seed = 1;
  // Books the orders reserve: 0 gives each order a book of its own (the check can then
  // count every order's applications); N > 0 spreads the orders over N books in turn, so
  // 1 puts every order on one hot row.
  int64_t books = 0;
};

struct Workload {
  std::vector<OrderPlaced> orders;      // the distinct orders
  std::vector<std::string> books;       // the books they reserve, each once, in order
  std::vector<OrderPlaced> deliveries;  // what the consumers get, in order
  int64_t duplicates = 0;               // deliveries beyond the first of their MessageId
  int64_t expected_reserved = 0;        // sum of the distinct orders' quantities
};

// Same spec, same workload, on every platform (no std:: distributions, whose algorithms
// the standard leaves to the library). Throws std::invalid_argument for messages < 1 or a
// rate outside [0, 1]. At least one order is made, so a rate of 1 still has an original.
Workload MakeWorkload(const WorkloadSpec& spec);

// What the database says was applied, order by order. With shared books (spec.books > 0)
// it is book by book instead: a book over its orders' total counts the excess units as
// doubled (and the book in doubled_orders), a book under it counts the missing units as
// lost.
struct EffectCheck {
  int64_t expected_reserved = 0;  // sum of the distinct orders' quantities
  int64_t reserved = 0;           // sum of Reserved over the workload's books
  int64_t doubled = 0;            // applications beyond the first, summed over orders
  int64_t doubled_orders = 0;     // orders applied more than once
  int64_t lost = 0;               // orders never applied, though a copy of theirs was handled
  // Orders never applied and no copy of which was acked, when the caller says which those
  // are (a soak that ended at its timeout): the run ended before any consumer finished one,
  // so they were not reached, not lost. Counted apart from lost.
  int64_t not_reached = 0;
  int64_t odd = 0;                // books whose Reserved is not a multiple of the quantity
  bool held() const {
    return doubled == 0 && lost == 0 && odd == 0 && reserved == expected_reserved;
  }
};

// unacked_orders (may be null): the OrderIds no copy of which was acked; an order among them
// that was never applied counts as not_reached instead of lost (one book per order only:
// with shared books only each book's total is known).
EffectCheck CheckEffects(const WorkloadDatabase& db, const Workload& workload,
                         const std::unordered_set<std::string>* unacked_orders = nullptr);
// The same check on Reserved per BookId, however it was read.
EffectCheck CheckEffects(const std::unordered_map<std::string, int64_t>& reserved,
                         const Workload& workload,
                         const std::unordered_set<std::string>* unacked_orders = nullptr);

}  // namespace dedupsim
