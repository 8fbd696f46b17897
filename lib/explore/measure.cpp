// The measurement and recording of a run (scheduler_impl.h): what each delivery attempt
// returned (RecordResult, RecordGivenUp, AfterAttempt), and once every instance is done,
// the figures and the verdict read from the database and the provider (Measure): each
// book's Reserved shared out among the orders expected on it, each order's effect read by
// its subscriber's `applied` through a probe.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "explore/scheduler_impl.h"

namespace dedupsim::explore {

size_t Scheduler::Impl::TallySlot(const Delivery& d) const {
  size_t subscriber = 0;
  while (subscriber < plan->subscribers.size() && plan->subscribers[subscriber] != d.subscriber) {
    ++subscriber;
  }
  if (subscriber == plan->subscribers.size()) {
    throw std::logic_error(
        fmt::format("plan delivers to {}, which is not among its subscribers", d.subscriber->name));
  }
  return d.order * plan->subscribers.size() + subscriber;
}

void Scheduler::Impl::RecordResult(const Delivery& d, DeliveryResult r) {
  Tally& t = tallies[TallySlot(d)];
  t.acked = true;
  if (r == DeliveryResult::kNeedsReconciliation) t.flagged = true;
}

void Scheduler::Impl::RecordGivenUp(const Delivery& d) { tallies[TallySlot(d)].given_up = true; }

void Scheduler::Impl::AfterAttempt(const Delivery& d) {
  if (plan->instances.size() != 1) return;  // others' steps may be in between: not its alone
  std::map<std::string, int64_t>& mine = moved[TallySlot(d)];
  for (const BookRow& b : database->ReadBooks()) {
    int64_t& before = reserved_now[b.book_id];
    if (b.reserved != before) mine[b.book_id] += b.reserved - before;
    before = b.reserved;
  }
}

namespace {

// Shares out what a book's Reserved moved by among the reservations expected on it (the
// quantities, one per order and stock subscriber, each expected once): the counts, one per
// quantity, whose reservations add up to delta exactly, the nearest to once each (the fewest
// reservations missing or repeated; the first found on a tie). nullopt when no whole counts
// add up to it: the book moved by another amount.
std::optional<std::vector<int64_t>> ShareOut(int64_t delta, const std::vector<int64_t>& quantities) {
  std::optional<std::vector<int64_t>> best;
  int64_t best_distance = 0;
  std::vector<int64_t> counts(quantities.size(), 0);
  constexpr int64_t kMostTimes = 8;  // more than any plan delivers one order
  std::function<void(size_t, int64_t, int64_t)> search = [&](size_t i, int64_t left,
                                                               int64_t distance) {
    if (best && distance >= best_distance) return;
    if (i == quantities.size()) {
      if (left == 0) {
        best = counts;
        best_distance = distance;
      }
      return;
    }
    // Once first, then the neighbours: the nearest solution is found early.
    for (int64_t n : {int64_t{1}, int64_t{0}, int64_t{2}, int64_t{3}, int64_t{4}, int64_t{5},
                      int64_t{6}, int64_t{7}, kMostTimes}) {
      if (quantities[i] <= 0 || n * quantities[i] > left) continue;
      counts[i] = n;
      search(i + 1, left - n * quantities[i], distance + (n > 1 ? n - 1 : 1 - n));
    }
    counts[i] = 0;
  };
  if (delta >= 0) search(0, delta, 0);
  return best;
}

// The probe the adapters read their effects through: the subscriber and order being
// measured are set by Measure before it calls the subscriber's `applied`.
class Probe final : public EffectProbe {
 public:
  Probe(Scheduler::Impl& impl, const std::map<std::pair<size_t, size_t>, int64_t>& reserved)
      : impl_(impl), reserved_(reserved) {}
  void Measuring(size_t order, size_t subscriber) {
    order_ = order;
    subscriber_ = subscriber;
  }
  int64_t ReservedTimes(const LogicalOrder& order) override {
    const LogicalOrder& measured = impl_.plan->orders.at(order_);
    if (measured.order_id != order.order_id) {
      throw std::logic_error("an effect was read for another order than the one measured");
    }
    auto it = reserved_.find({order_, subscriber_});
    return it == reserved_.end() ? 0 : it->second;
  }
  int64_t ProviderEmailsSentFor(const LogicalOrder& order) override {
    return impl_.database->ProviderEmailsSent(
        StockReservedText(OrderPlaced{"", order.order_id, order.book_id, order.quantity}));
  }
  int64_t EmailsSentFor(const LogicalOrder& order) override { return CountFor(impl_.sent, order); }
  int64_t PublishedFor(const LogicalOrder& order) override {
    return CountFor(impl_.published, order);
  }

 private:
  // Entries that belong to a message of the order and were sent by the measured subscriber.
  int64_t CountFor(const std::vector<Scheduler::Impl::Sent>& entries, const LogicalOrder& order) {
    const Strategy* subscriber = impl_.plan->subscribers.at(subscriber_);
    int64_t n = 0;
    for (const Scheduler::Impl::Sent& e : entries) {
      if (e.subscriber != nullptr && e.subscriber != subscriber) continue;
      auto it = impl_.order_of_message.find(e.message_id);
      if (it != impl_.order_of_message.end() &&
          impl_.plan->orders[it->second].order_id == order.order_id)
        ++n;
    }
    return n;
  }

  Scheduler::Impl& impl_;
  const std::map<std::pair<size_t, size_t>, int64_t>& reserved_;
  size_t order_ = 0;
  size_t subscriber_ = 0;
};

}  // namespace

Figures Scheduler::Impl::Measure(const Plan& p, ScheduleResult& result) {
  Figures f;
  // The books as the run left them, against how they started: each book's Reserved is
  // shared out among the reservations expected on it; a book no order names must not
  // move, and nothing else of a row may change.
  std::vector<BookRow> after = database->ReadBooks();
  std::map<std::pair<size_t, size_t>, int64_t> reserved;  // (order, subscriber) -> times
  std::vector<std::string> wrong;                          // what moved that should not have
  std::set<std::string> seen;
  for (const BookRow& before : books) {
    seen.insert(before.book_id);
    auto now = std::find_if(after.begin(), after.end(),
                            [&](const BookRow& b) { return b.book_id == before.book_id; });
    std::vector<std::pair<size_t, size_t>> units;
    std::vector<int64_t> quantities;
    for (size_t o = 0; o < p.orders.size(); ++o) {
      if (p.orders[o].book_id != before.book_id) continue;
      for (size_t s = 0; s < p.subscribers.size(); ++s) {
        if (p.subscribers[s]->effect != "stock") continue;
        units.emplace_back(o, s);
        quantities.push_back(p.orders[o].quantity);
        f.reserved_expected += p.orders[o].quantity;
      }
    }
    if (now == after.end()) {
      wrong.push_back(fmt::format("{}'s StockItems row was deleted", before.title));
      for (const auto& u : units) reserved[u] = kNotWhole;
      continue;
    }
    const int64_t delta = now->reserved - before.reserved;
    f.reserved += delta;
    if (now->title != before.title || now->on_hand != before.on_hand) {
      wrong.push_back(fmt::format("{}'s OnHand went from {} to {} (only Reserved is the order's)",
                                  before.title, before.on_hand, now->on_hand));
    }
    if (units.empty()) {
      if (delta != 0) {
        wrong.push_back(fmt::format("{}, which no message names, went from {} to {} reserved",
                                    before.title, before.reserved, now->reserved));
      }
      continue;
    }
    std::optional<std::vector<int64_t>> shares = ShareOut(delta, quantities);
    for (size_t i = 0; i < units.size(); ++i) reserved[units[i]] = shares ? (*shares)[i] : kNotWhole;
    if (!shares) {
      int64_t expected = 0;
      for (int64_t q : quantities) expected += q;
      wrong.push_back(fmt::format(
          "{} went from {} to {} reserved: {} more, which no whole number of its orders' "
          "quantities makes (once each: {})",
          before.title, before.reserved, now->reserved, delta, expected));
    }
  }
  for (const BookRow& now : after) {
    if (seen.count(now.book_id) == 0) {
      wrong.push_back(fmt::format("a StockItems row was added ({})", now.title));
    }
  }
  if (p.instances.size() == 1) {
    // One instance: each delivery's moves are its own. The reservations of an order are what
    // its own deliveries moved its book by; moving another book is no reservation of it.
    for (auto& [unit, times] : reserved) {
      const LogicalOrder& order = p.orders[unit.first];
      int64_t own = 0;
      bool elsewhere = false;
      for (const auto& [book, delta] : moved[unit.first * p.subscribers.size() + unit.second]) {
        if (book == order.book_id) {
          own += delta;
        } else {
          elsewhere = true;
        }
      }
      times = !elsewhere && own >= 0 && own % order.quantity == 0 ? own / order.quantity
                                                                   : kNotWhole;
    }
  }
  Probe probe(*this, reserved);
  const bool decided = result.outcome == Outcome::kDeadlock || result.outcome == Outcome::kError;
  for (size_t o = 0; o < p.orders.size(); ++o) {
    for (size_t s = 0; s < p.subscribers.size(); ++s) {
      const Tally& t = tallies[o * p.subscribers.size() + s];
      probe.Measuring(o, s);
      int64_t applied = p.subscribers[s]->applied(probe, p.orders[o]);
      if (t.flagged) f.flagged++;
      if (!decided) {
        result.outcome =
            Worse(result.outcome, Classify(applied, t.flagged, t.acked, t.given_up));
      }
    }
  }
  if (!wrong.empty() && !decided) {
    result.outcome = Worse(result.outcome, Outcome::kWrong);
    std::string what = fmt::format("{}", fmt::join(wrong, "; "));
    result.note = result.note.empty() ? what : result.note + "; " + what;
  }
  f.inbox_rows = database->InboxRows();
  f.emails_sent = static_cast<int64_t>(sent.size());
  f.crashes = crashes;
  f.deliveries = attempts;
  return f;
}

}  // namespace dedupsim::explore
