// What a run left: the figures (Scheduler::Impl::Measure) and, through the probe, each
// strategy's effect (Strategy::applied), read on the control connection after every
// instance finished.
#include <string>
#include <string_view>
#include <vector>

#include "explore/scheduler_impl.h"
#include "sqlite/schema.h"
#include "sqlite/statement.h"

namespace dedupsim::explore {

namespace {

// The probe the adapters read their effects through.
class Probe final : public EffectProbe {
 public:
  explicit Probe(Scheduler::Impl& impl) : impl_(impl) {}
  Connection& db() override {
    if (impl_.pg_control) throw std::logic_error("a PostgreSQL run has no SQLite database");
    return impl_.control;
  }
  int64_t Reserved(std::string_view book_id) override {
    if (impl_.pg_control) {
      return impl_.pg_control
          ->Exec("SELECT Reserved FROM StockItems WHERE BookId = $1", {std::string(book_id)})
          .Int(0, 0);
    }
    return ReadStock(impl_.control, book_id).reserved;
  }
  Connection* aux() override { return impl_.aux_control ? &*impl_.aux_control : nullptr; }
  int64_t EmailsSentFor(const LogicalOrder& order) override { return CountFor(impl_.sent, order); }
  int64_t PublishedFor(const LogicalOrder& order) override {
    return CountFor(impl_.published, order);
  }

 private:
  // Entries (message ids) that belong to a message of the order.
  int64_t CountFor(const std::vector<std::string>& ids, const LogicalOrder& order) {
    int64_t n = 0;
    for (const std::string& key : ids) {
      auto it = impl_.order_of_message.find(key);
      if (it != impl_.order_of_message.end() &&
          impl_.plan->orders[it->second].order_id == order.order_id)
        ++n;
    }
    return n;
  }

  Scheduler::Impl& impl_;
};

}  // namespace

Figures Scheduler::Impl::Measure(const Plan& p, ScheduleResult& result) {
  Figures f;
  Probe probe(*this);
  bool reserves = false;
  for (const Strategy* s : p.subscribers) reserves = reserves || s->effect == "stock";
  for (size_t o = 0; o < p.orders.size(); ++o) {
    f.reserved += probe.Reserved(p.orders[o].book_id);
    if (reserves) f.reserved_expected += p.orders[o].quantity;
    for (size_t s = 0; s < p.subscribers.size(); ++s) {
      const Tally& t = tallies[o * p.subscribers.size() + s];
      int64_t applied = p.subscribers[s]->applied(probe, p.orders[o]);
      if (t.flagged) f.flagged++;
      if (result.outcome != Outcome::kDeadlock && result.outcome != Outcome::kError) {
        result.outcome = Worse(result.outcome, Classify(applied, t.flagged, t.acked));
      }
    }
  }
  if (pg_control) {
    f.inbox_rows = pg_control->Exec("SELECT count(*) FROM Inbox").Int(0, 0);
  } else {
    Statement& rows = control.Cached("SELECT count(*) FROM Inbox");
    rows.Step();
    f.inbox_rows = rows.ColumnInt(0);
    rows.Reset();
  }
  f.emails_sent = static_cast<int64_t>(sent.size());
  f.crashes = crashes;
  f.deliveries = attempts;
  return f;
}

}  // namespace dedupsim::explore
