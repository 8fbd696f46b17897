#include "bench/workload.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <unordered_map>


namespace dedupsim {

namespace {

// A draw in [0, bound) from 64 random bits. The modulo bias is below bound / 2^64, far
// under anything a run could show for the bounds used here.
uint64_t Below(std::mt19937_64& rng, uint64_t bound) { return rng() % bound; }

}  // namespace

Workload MakeWorkload(const WorkloadSpec& spec) {
  if (spec.messages < 1) throw std::invalid_argument("messages must be at least 1");
  if (!(spec.duplicate_rate >= 0.0 && spec.duplicate_rate <= 1.0)) {
    throw std::invalid_argument("duplicate rate must be within [0, 1]");
  }
  std::mt19937_64 rng(spec.seed);
  IdGenerator ids(spec.seed ^ 0x9e3779b97f4a7c15ULL);
  auto duplicates =
      static_cast<int64_t>(static_cast<double>(spec.messages) * spec.duplicate_rate + 0.5);
  if (duplicates > spec.messages - 1) duplicates = spec.messages - 1;
  const int64_t distinct = spec.messages - duplicates;

  if (spec.books < 0) throw std::invalid_argument("books must be at least 0");
  Workload w;
  w.duplicates = duplicates;
  if (spec.books > 0) {
    IdGenerator book_ids(spec.seed ^ 0x626f6f6b73ULL);
    for (int64_t b = 0; b < spec.books && b < distinct; ++b) w.books.push_back(book_ids.Next());
  }
  w.orders.reserve(static_cast<size_t>(distinct));
  w.deliveries.reserve(static_cast<size_t>(spec.messages));
  for (int64_t i = 0; i < distinct; ++i) {
    OrderPlaced m;
    m.message_id = ids.Next();
    m.order_id = ids.Next();
    m.book_id = ids.Next();  // drawn in every case, so the other ids do not move
    if (spec.books > 0) m.book_id = w.books[static_cast<size_t>(i) % w.books.size()];
    m.quantity = static_cast<int64_t>(1 + Below(rng, 5));
    w.expected_reserved += m.quantity;
    if (spec.books == 0) w.books.push_back(m.book_id);
    w.orders.push_back(m);
    w.deliveries.push_back(std::move(m));
  }
  for (int64_t i = 0; i < duplicates; ++i) {
    w.deliveries.push_back(w.orders[Below(rng, static_cast<uint64_t>(distinct))]);
  }
  // Fisher-Yates, written out so the order does not depend on the standard library.
  for (size_t i = w.deliveries.size() - 1; i > 0; --i) {
    size_t j = static_cast<size_t>(Below(rng, i + 1));
    std::swap(w.deliveries[i], w.deliveries[j]);
  }
  return w;
}

EffectCheck CheckEffects(const WorkloadDatabase& db, const Workload& workload,
                         const std::unordered_set<std::string>* unacked_orders) {
  return CheckEffects(db.ReadReserved(), workload, unacked_orders);
}

EffectCheck CheckEffects(const std::unordered_map<std::string, int64_t>& reserved,
                         const Workload& workload,
                         const std::unordered_set<std::string>* unacked_orders) {
  EffectCheck check;
  check.expected_reserved = workload.expected_reserved;
  if (workload.books.size() != workload.orders.size()) {
    // Shared books: only each book's total can be checked.
    std::unordered_map<std::string, int64_t> expected;
    for (const OrderPlaced& order : workload.orders) expected[order.book_id] += order.quantity;
    for (const std::string& book : workload.books) {
      auto it = reserved.find(book);
      int64_t got = it == reserved.end() ? 0 : it->second;
      check.reserved += got;
      if (got > expected[book]) {
        check.doubled += got - expected[book];
        check.doubled_orders++;
      }
      if (got < expected[book]) check.lost += expected[book] - got;
    }
    return check;
  }
  for (const OrderPlaced& order : workload.orders) {
    auto it = reserved.find(order.book_id);
    int64_t got = it == reserved.end() ? 0 : it->second;
    check.reserved += got;
    if (got % order.quantity != 0) {
      check.odd++;
      continue;
    }
    int64_t applied = got / order.quantity;
    if (applied == 0) {
      if (unacked_orders != nullptr && unacked_orders->count(order.order_id) > 0) {
        check.not_reached++;
      } else {
        check.lost++;
      }
    }
    if (applied > 1) {
      check.doubled += applied - 1;
      check.doubled_orders++;
    }
  }
  return check;
}

}  // namespace dedupsim
