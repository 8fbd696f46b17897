// The explorer's rows: one per entry of the registry of consumers (consumers/registry.h),
// in its order. A row adds what only the explorer needs: how to run the entry's one handler
// on an instance's store (either backend), and how to read back how many times the effect
// happened. An entry with a side store is SQLite's only: its side store is the explorer's
// second file.
#include "explore/strategies.h"

#include <algorithm>
#include <vector>

namespace dedupsim::explore {

int64_t StockApplied(EffectProbe& probe, const LogicalOrder& order) {
  return probe.ReservedTimes(order);
}

int64_t EmailApplied(EffectProbe& probe, const LogicalOrder& order) {
  return probe.EmailsSentFor(order);
}

int64_t ProviderEmailsApplied(EffectProbe& probe, const LogicalOrder& order) {
  return probe.ProviderEmailsSentFor(order);
}

int64_t EveryEffectOnce(int64_t effect, int64_t published) {
  if (effect > 1 || published > 1) return std::max(effect, published);
  return std::min(effect, published);
}

namespace {

// How many times the entry's effect happened: the stock reserved, or the emails sent, read
// where they were sent (the provider's side store when the entry keeps one).
int64_t (*EffectReader(const ConsumerEntry& c))(EffectProbe&, const LogicalOrder&) {
  if (c.effect == "stock") return &StockApplied;
  return c.side == SideStoreKind::kEmailProvider ? &ProviderEmailsApplied : &EmailApplied;
}

Strategy RowOf(const ConsumerEntry& c) {
  return Strategy{
      .name = c.name,
      .summary = c.summary,
      .effect = c.effect,
      .partner = c.partner,
      .crash_points = c.crash_points,
      .tables = {.reset = c.reset, .side = c.side},
      .aux_target = SideStoreTarget(c.side),
      .handle = [&c](StoreContext& d, const OrderPlaced& m) {
        ConsumerEnv env{d.store, d.clock, &d.email, d.side};
        return c.handle(env, m);
      },
      .applied = EffectReader(c),
  };
}

struct Table {
  std::vector<Strategy> rows;
  std::vector<const Strategy*> pointers;
  Table() {
    rows.reserve(AllConsumers().size());
    for (const ConsumerEntry* c : AllConsumers()) rows.push_back(RowOf(*c));
    for (const Strategy& s : rows) pointers.push_back(&s);
  }
};

const Table& TheTable() {
  static const Table table;
  return table;
}

}  // namespace

std::span<const Strategy* const> AllStrategies() { return TheTable().pointers; }

const Strategy* FindStrategy(std::string_view name) {
  for (const Strategy* s : AllStrategies()) {
    if (s->name == name) return s;
  }
  return nullptr;
}

const Strategy& StrategyOf(const ConsumerEntry& consumer) {
  const Strategy* s = FindStrategy(consumer.name);
  if (s == nullptr) throw std::logic_error("a consumer of the registry has no explorer row");
  return *s;
}

std::string StrategyNames() { return ConsumerNames(); }

}  // namespace dedupsim::explore
