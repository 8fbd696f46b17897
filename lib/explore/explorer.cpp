#include "explore/explorer.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <stdexcept>

#include "explore/strategies.h"

namespace dedupsim::explore {

namespace {

// Follows a prefix, then always takes the lowest-numbered eligible instance.
class PrefixChooser final : public Chooser {
 public:
  explicit PrefixChooser(const std::vector<int>& prefix) : prefix_(prefix) {}
  std::optional<int> Choose(size_t depth, uint32_t eligible) override {
    if (depth < prefix_.size()) return prefix_[depth];
    return std::countr_zero(eligible);
  }

 private:
  const std::vector<int>& prefix_;
};

// Takes exactly the given choices and gives up after them.
class ExactChooser final : public Chooser {
 public:
  explicit ExactChooser(const std::vector<int>& picks) : picks_(picks) {}
  std::optional<int> Choose(size_t depth, uint32_t) override {
    if (depth >= picks_.size()) return std::nullopt;
    return picks_[depth];
  }

 private:
  const std::vector<int>& picks_;
};

// The prefix of the next schedule in depth-first order, or false when none is left.
bool NextPrefix(const ScheduleResult& run, std::vector<int>& prefix) {
  for (size_t i = run.picks.size(); i-- > 0;) {
    uint32_t higher = run.eligible[i] & ~((2u << run.picks[i]) - 1u);
    if (higher != 0) {
      prefix.assign(run.picks.begin(), run.picks.begin() + static_cast<std::ptrdiff_t>(i));
      prefix.push_back(std::countr_zero(higher));
      return true;
    }
  }
  return false;
}

std::string StepWithoutInstance(const std::string& step) {
  size_t gap = step.find("  ");
  return gap == std::string::npos ? step : step.substr(gap + 2);
}

}  // namespace

bool CellResult::Safe() const {
  for (size_t i = 0; i < kOutcomeCount; ++i) {
    if (counts[i] > 0 && BreaksInvariant(OutcomeAt(i))) return false;
  }
  return true;
}

double MatrixResult::SchedulesPerSecond() const {
  return elapsed_ms > 0 ? static_cast<double>(schedules) * 1000.0 / elapsed_ms : 0.0;
}

namespace {

std::vector<const Strategy*> TableAnd(std::span<const Strategy* const> extra) {
  std::vector<const Strategy*> all(AllStrategies().begin(), AllStrategies().end());
  all.insert(all.end(), extra.begin(), extra.end());
  return all;
}

}  // namespace

Explorer::Explorer(ExploreOptions options, std::span<const Strategy* const> extra)
    : options_(options),
      strategies_(TableAnd(extra)),
      scheduler_(strategies_, SchedulerOptions{.journal = options.journal,
                                                   .synchronous = options.synchronous,
                                                   .reuse_connections = options.reuse_connections}) {}

std::vector<Plan> Explorer::Plans(const Strategy& strategy, const Fault& fault) const {
  IdGenerator ids(options_.seed);
  return fault.plans(strategy, ids);
}

std::vector<std::string> Explorer::CleanDeliverySteps(const Strategy& strategy) {
  IdGenerator ids(options_.seed);
  Plan plan;
  plan.orders.push_back(NewLogicalOrder(ids, 2));
  plan.subscribers.push_back(&strategy);
  Delivery d;
  d.subscriber = &strategy;
  d.message = NewMessage(ids, plan.orders[0]);
  plan.instances.push_back({{d}, -1});
  std::vector<int> none;
  PrefixChooser chooser(none);
  ScheduleResult run = scheduler_.Run(plan, chooser);
  std::vector<std::string> steps;
  for (const std::string& step : run.steps) steps.push_back(StepWithoutInstance(step));
  return steps;
}

void Explorer::CheckCrashPoints(const Strategy& strategy) {
  if (checked_.count(&strategy) > 0) return;
  std::vector<std::string> steps = CleanDeliverySteps(strategy);
  std::vector<std::string> declared(strategy.crash_points.begin(), strategy.crash_points.end());
  if (steps != declared) {
    throw std::logic_error(fmt::format(
        "strategy {} declares crash points [{}] but a clean delivery takes the steps [{}]",
        strategy.name, fmt::join(declared, ", "), fmt::join(steps, ", ")));
  }
  checked_.insert(&strategy);
}

CellResult Explorer::ExploreCell(const Strategy& strategy, const Fault& fault) {
  CheckCrashPoints(strategy);
  CellResult cell;
  cell.strategy = &strategy;
  cell.fault = &fault;
  std::vector<Plan> plans = Plans(strategy, fault);
  for (size_t p = 0; p < plans.size(); ++p) {
    for (const Strategy* s : plans[p].subscribers) CheckCrashPoints(*s);
    VariantResult variant;
    variant.variant = plans[p].variant;
    std::vector<int> prefix;
    for (;;) {
      PrefixChooser chooser(prefix);
      ScheduleResult run = scheduler_.Run(plans[p], chooser);
      if (run.abandoned) {
        throw std::logic_error(fmt::format("{} x {}: a replay did not follow its own choices",
                                           strategy.name, fault.name));
      }
      variant.schedules++;
      cell.steps += static_cast<int64_t>(run.picks.size());
      variant.longest = std::max(variant.longest, run.picks.size());
      variant.counts[Index(run.outcome)]++;
      if (IsFailing(run.outcome) &&
          (!cell.shortest || run.picks.size() < cell.shortest->picks.size())) {
        cell.shortest = Counterexample{p, plans[p].variant, run.picks, run.steps, run.outcome,
                                       run.figures};
      }
      if (!NextPrefix(run, prefix)) break;
    }
    cell.schedules += variant.schedules;
    for (size_t i = 0; i < kOutcomeCount; ++i) cell.counts[i] += variant.counts[i];
    cell.variants.push_back(std::move(variant));
  }
  return cell;
}

MatrixResult Explorer::ExploreMatrix(std::span<const Strategy* const> strategies,
                                     std::span<const Fault* const> faults) {
  auto started = std::chrono::steady_clock::now();
  MatrixResult m;
  m.seed = options_.seed;
  m.journal = options_.journal;
  m.strategies.assign(strategies.begin(), strategies.end());
  m.faults.assign(faults.begin(), faults.end());
  for (const Strategy* s : strategies) {
    for (const Fault* f : faults) {
      m.cells.push_back(ExploreCell(*s, *f));
      m.schedules += m.cells.back().schedules;
      m.steps += m.cells.back().steps;
    }
  }
  m.elapsed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return m;
}

std::optional<size_t> ShortestFailingCell(const std::vector<CellResult>& cells) {
  std::optional<size_t> best;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (!cells[i].shortest) continue;
    if (!best || cells[i].shortest->picks.size() < cells[*best].shortest->picks.size()) best = i;
  }
  return best;
}

ScheduleResult Explorer::ReplayShortest(const CellResult& cell, Recorder* recorder) {
  if (!cell.shortest) throw std::logic_error("no failing schedule to replay");
  std::vector<Plan> plans = Plans(*cell.strategy, *cell.fault);
  std::optional<ScheduleResult> run =
      RunExactly(plans.at(cell.shortest->plan_index), cell.shortest->picks, recorder);
  if (!run) {
    throw std::logic_error(fmt::format("{} x {}: the shortest failing schedule did not replay",
                                       cell.strategy->name, cell.fault->name));
  }
  return *run;
}

std::optional<ScheduleResult> Explorer::RunExactly(const Plan& plan, const std::vector<int>& picks,
                                                   Recorder* recorder) {
  ExactChooser chooser(picks);
  ScheduleResult run = scheduler_.Run(plan, chooser, recorder);
  if (run.abandoned || run.picks.size() != picks.size()) return std::nullopt;
  return run;
}

}  // namespace dedupsim::explore
