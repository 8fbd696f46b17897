#include "explore/random_mode.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <map>
#include <set>
#include <stdexcept>

#include "explore/faults.h"
#include "explore/strategies.h"

namespace dedupsim::explore {

namespace {

// SplitMix64: spreads (seed, run, stream) into independent, well-mixed generator seeds.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t StreamSeed(uint64_t seed, int64_t run, uint64_t stream) {
  return Mix(Mix(Mix(seed) ^ static_cast<uint64_t>(run)) ^ stream);
}

// Draws by modulo, not <random>'s distributions, whose results may differ between
// standard libraries: the same seed must give the same runs everywhere.
class Draw {
 public:
  explicit Draw(uint64_t seed) : rng_(seed) {}
  uint64_t Below(uint64_t n) { return rng_() % n; }
  bool OneIn(uint64_t n) { return Below(n) == 0; }

 private:
  std::mt19937_64 rng_;
};

class RandomChooser final : public Chooser {
 public:
  explicit RandomChooser(uint64_t seed) : draw_(seed) {}
  std::optional<int> Choose(size_t, uint32_t eligible) override {
    uint64_t k = draw_.Below(static_cast<uint64_t>(std::popcount(eligible)));
    for (int i = 0; i < 32; ++i) {
      if ((eligible & (1u << i)) != 0 && k-- == 0) return i;
    }
    return std::nullopt;
  }

 private:
  Draw draw_;
};

}  // namespace

RandomMix RandomMix::From(const std::vector<std::string>& faults) {
  if (faults.empty()) return RandomMix{};
  RandomMix mix{false, false, false, false, false, false};
  for (const std::string& f : faults) {
    if (f == "duplicate") mix.duplicate = true;
    if (f == "crash") mix.crash = true;
    if (f == "concurrent") mix.concurrent = true;
    if (f == "producer-duplicate") mix.producer_duplicate = true;
    if (f == "second-subscriber") mix.second_subscriber = true;
    if (f == "lost-ack") mix.lost_ack = true;
  }
  return mix;
}

std::vector<std::string> RandomMix::Names() const {
  std::vector<std::string> names;
  if (duplicate) names.emplace_back("duplicate");
  if (crash) names.emplace_back("crash");
  if (concurrent) names.emplace_back("concurrent");
  if (producer_duplicate) names.emplace_back("producer-duplicate");
  if (second_subscriber) names.emplace_back("second-subscriber");
  if (lost_ack) names.emplace_back("lost-ack");
  return names;
}

bool RandomMix::All() const {
  return duplicate && crash && concurrent && producer_duplicate && second_subscriber && lost_ack;
}

Plan RandomPlan(const Strategy& strategy, uint64_t seed, int64_t run, const RandomMix& mix) {
  // The same seed, run and mix always make the same plan.
  Draw draw(StreamSeed(seed, run, 0));
  IdGenerator ids(StreamSeed(seed, run, 1));
  Plan plan;
  plan.variant = fmt::format("run {}", run);
  const uint64_t drawn_instances = 3 + draw.Below(2);
  const uint64_t instances = mix.concurrent ? drawn_instances : 1;
  const uint64_t orders = 1 + draw.Below(3);
  plan.subscribers.push_back(&strategy);
  if (draw.OneIn(3) && mix.second_subscriber) {
    const Strategy* partner = FindStrategy(strategy.partner);
    if (partner == nullptr)
      throw std::logic_error("strategy " + std::string(strategy.name) + ": unknown partner");
    plan.subscribers.push_back(partner);
  }
  std::set<std::string> held;
  if (plan.subscribers.size() > 1) held.insert("second-subscriber");
  if (instances > 1) held.insert("concurrent");
  plan.instances.resize(instances);
  for (uint64_t o = 0; o < orders; ++o) {
    plan.orders.push_back(NewLogicalOrder(ids, static_cast<int64_t>(1 + draw.Below(3))));
  }
  for (size_t o = 0; o < plan.orders.size(); ++o) {
    for (const Strategy* subscriber : plan.subscribers) {
      OrderPlaced message = NewMessage(ids, plan.orders[o]);
      OrderPlaced resent = NewMessage(ids, plan.orders[o]);  // same order, new MessageId
      std::vector<OrderPlaced> copies{message};
      const bool extra = draw.OneIn(3);
      const uint64_t extra_copies = 1 + draw.Below(2);
      const bool producer = draw.OneIn(4);
      // The partner is there to show interference (a dedup record that silences it), so
      // it gets one clean copy: its own faults are its own row's business.
      const bool partner = subscriber != &strategy;
      if (extra && mix.duplicate && !partner) {
        copies.insert(copies.end(), extra_copies, message);
        held.insert("duplicate");
      }
      if (producer && mix.producer_duplicate && !partner) {
        copies.push_back(resent);
        held.insert("producer-duplicate");
      }
      for (const OrderPlaced& copy : copies) {
        const auto& points = subscriber->crash_points;
        const bool crash1 = draw.OneIn(3);
        const size_t point1 = draw.Below(points.size());
        const bool crash2 = draw.OneIn(4);
        const size_t point2 = draw.Below(points.size());
        const bool lost = draw.OneIn(6);
        const uint64_t where = draw.Below(instances);
        const uint64_t where_again = draw.Below(instances);
        Delivery d;
        d.subscriber = subscriber;
        d.order = o;
        d.message = copy;
        if (crash1 && mix.crash && !partner) {
          d.crash_at.emplace_back(points[point1]);
          if (crash2) d.crash_at.emplace_back(points[point2]);
          held.insert("crash");
        }
        if (lost && mix.lost_ack && !partner) {
          d.ack_lost = true;
          held.insert("lost-ack");
          Delivery again = d;  // the broker redelivers once the lock expires
          again.ack_lost = false;
          again.crash_at.clear();
          again.arrives_after = kLockDuration;
          plan.instances[where_again].deliveries.push_back(std::move(again));
        }
        plan.instances[where].deliveries.push_back(std::move(d));
      }
    }
  }
  for (const std::string& name : mix.Names()) {  // in the mix's order
    if (held.count(name) > 0) plan.faults_held.push_back(name);
  }
  for (InstanceScript& script : plan.instances) {  // Fisher-Yates, by the same draws
    for (size_t i = script.deliveries.size(); i > 1; --i) {
      std::swap(script.deliveries[i - 1], script.deliveries[draw.Below(i)]);
    }
  }
  return plan;
}

ScheduleResult RunRandom(Scheduler& scheduler, const Strategy& strategy, uint64_t seed, int64_t run,
                         const RandomMix& mix, Recorder* recorder) {
  Plan plan = RandomPlan(strategy, seed, run, mix);
  RandomChooser chooser(StreamSeed(seed, run, 2));
  return scheduler.Run(plan, chooser, recorder);
}

std::string DescribePlan(const Plan& plan) {
  std::map<std::string, int> numbers;  // message id -> m1, m2 ...
  std::string out = fmt::format("{} instances, {} order{}", plan.instances.size(),
                                plan.orders.size(), plan.orders.size() == 1 ? "" : "s");
  for (size_t i = 0; i < plan.instances.size(); ++i) {
    std::vector<std::string> items;
    for (const Delivery& d : plan.instances[i].deliveries) {
      auto [it, added] =
          numbers.emplace(d.message.message_id, static_cast<int>(numbers.size()) + 1);
      std::string item =
          fmt::format("m{} (order {}) to {}", it->second, d.order + 1, d.subscriber->name);
      for (size_t a = 0; a < d.crash_at.size(); ++a) {
        if (!d.crash_at[a].empty())
          item += fmt::format(", attempt {} dies at {}", a + 1, d.crash_at[a]);
      }
      if (d.ack_lost) item += ", ack lost";
      items.push_back(item);
    }
    out += fmt::format(
        "\n  {}: {}", InstanceName(static_cast<int>(i)),
        items.empty() ? std::string("(nothing)") : fmt::format("{}", fmt::join(items, "; ")));
  }
  return out;
}

std::vector<std::string> RandomRow::FailuresCameFrom() const {
  std::vector<std::string> out;
  if (failing.empty()) return out;
  for (const auto& [name, tally] : by_fault) {
    if (tally.failing_without == 0 && tally.runs_without > 0) out.push_back(name);
  }
  return out;
}

double RandomResult::RunsPerSecond() const {
  return elapsed_ms > 0 ? static_cast<double>(TotalRuns()) * 1000.0 / elapsed_ms : 0.0;
}

RandomResult ExploreRandom(Scheduler& scheduler, std::span<const Strategy* const> strategies,
                           uint64_t seed, int64_t runs, const RandomMix& mix,
                           const ExploreProgressFn& progress) {
  auto started = std::chrono::steady_clock::now();
  ExploreProgress told{0, runs * static_cast<int64_t>(strategies.size()), 0};
  RandomResult result;
  result.seed = seed;
  result.mix = mix;
  result.runs = runs;
  result.journal = scheduler.journal();
  for (const Strategy* s : strategies) {
    RandomRow row;
    row.strategy = s;
    for (int64_t k = 0; k < runs; ++k) {
      ScheduleResult r = RunRandom(scheduler, *s, seed, k, mix);
      const std::vector<std::string> held = RandomPlan(*s, seed, k, mix).faults_held;
      const bool failed = IsFailing(r.outcome);
      for (const std::string& name : mix.Names()) {
        FaultTally& tally = row.by_fault[name];
        if (std::find(held.begin(), held.end(), name) != held.end()) {
          tally.runs_with++;
          if (failed) tally.failing_with++;
        } else {
          tally.runs_without++;
          if (failed) tally.failing_without++;
        }
      }
      row.runs++;
      row.steps += static_cast<int64_t>(r.picks.size());
      row.counts[Index(r.outcome)]++;
      if (IsFailing(r.outcome)) row.failing.push_back(k);
      told.done++;
      told.schedules++;
      if (progress) progress(told);
    }
    result.rows.push_back(std::move(row));
  }
  result.elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace dedupsim::explore
