#include "explore/explorer.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <exception>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>

#include "explore/deliveries.h"
#include "explore/search.h"
#include "explore/strategies.h"

namespace dedupsim::explore {

namespace {

// Plans the reduction may not be used on: an instance that starts when another ends makes
// a step's effect depend on more than the files it touched. (A delivery's clock is its own:
// a later arrival moves no other step's timestamps.)
bool Reducible(const Plan& plan) {
  for (const InstanceScript& script : plan.instances) {
    if (script.start_after >= 0) return false;
  }
  return true;
}

std::string StepWithoutInstance(const std::string& step) {
  size_t gap = step.find("  ");
  return gap == std::string::npos ? step : step.substr(gap + 2);
}

}  // namespace

RetryRule RetryRuleFor(const ExploreOptions& options) {
  if (options.retry) return *options.retry;
  // With the rollback journal a writer also waits for readers, and a read's lock can end
  // in a step whose footprint does not name the file (a statement reset after a hook).
  return options.reduce && options.journal == JournalMode::kWal ? RetryRule::kAfterRelease
                                                                : RetryRule::kAfterAnyStep;
}

bool CellResult::Safe() const {
  if (needless_reconciles > 0) return false;
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
      extra_(extra.begin(), extra.end()),
      strategies_(TableAnd(extra)),
      scheduler_(strategies_, SchedulerOptions{.journal = options.journal,
                                               .synchronous = options.synchronous,
                                               .reuse_connections = options.reuse_connections,
                                               .max_steps = options.max_steps,
                                               .retry = RetryRuleFor(options),
                                               .postgres = options.postgres,
                                               .isolation = options.isolation}) {}

std::vector<Plan> Explorer::Plans(const Strategy& strategy, const Fault& fault) const {
  IdGenerator ids(options_.seed);
  if (options_.graded) {
    if (fault.graded_plans == nullptr) {
      throw std::logic_error("fault " + std::string(fault.name) + " has no class-world plans");
    }
    return fault.graded_plans(strategy, ids);
  }
  if (fault.sized_plans != nullptr) return fault.sized_plans(strategy, ids, options_.world);
  if (fault.plans == nullptr) {
    throw std::logic_error("fault " + std::string(fault.name) + " is the class world's only");
  }
  return fault.plans(strategy, ids);
}

std::vector<std::string> Explorer::CleanDeliverySteps(const Strategy& strategy) {
  IdGenerator ids(options_.seed);
  Plan plan;
  if (options_.graded) {
    plan = GradedCleanPlan(strategy, ids);
  } else {
    plan.orders.push_back(NewLogicalOrder(ids, 2));
    plan.subscribers.push_back(&strategy);
    Delivery d;
    d.subscriber = &strategy;
    d.message = NewMessage(ids, plan.orders[0]);
    plan.instances.push_back({{d}, -1});
  }
  std::vector<int> none;
  PrefixChooser chooser(none);
  ScheduleResult run = scheduler_.Run(plan, chooser);
  if (run.out_of_time) {
    throw OutOfTime(fmt::format(
        "{}: its first delivery did not end in time: a step ran on until the scheduler's "
        "deadline stopped it",
        strategy.name));
  }
  // The first attempt's steps only: a delivery that fails is redelivered, and its
  // redeliveries are not steps of a clean delivery.
  std::vector<std::string> steps;
  for (size_t i = 0; i < run.steps.size(); ++i) {
    if (run.attempts[i] == 1) steps.push_back(StepWithoutInstance(run.steps[i]));
  }
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

CellResult Explorer::ExploreCell(const Strategy& strategy, const Fault& fault,
                                 const CellBudget* budget) {
  CheckCrashPoints(strategy);
  CellResult cell;
  cell.strategy = &strategy;
  cell.fault = &fault;
  std::vector<Plan> plans = Plans(strategy, fault);
  // Follow-up plans are added as their plan is run (the index loop sees them).
  const bool follow = options_.graded && fault.follow_up != nullptr;
  std::vector<bool> done;  // each plan: every schedule of it was run
  cell.variants.reserve(plans.size());
  // Counts a run of plan p: its variant, the cell's counts and counterexamples, and the
  // follow-up plans a one-instance plan's run calls for.
  auto count = [&](size_t p, const ScheduleResult& run) {
    VariantResult& variant = cell.variants[p];
    variant.schedules++;
    cell.schedules++;
    progress_.schedules++;
    if (options_.progress) options_.progress(progress_);
    cell.steps += static_cast<int64_t>(run.picks.size());
    variant.longest = std::max(variant.longest, run.picks.size());
    variant.counts[Index(run.outcome)]++;
    cell.counts[Index(run.outcome)]++;
    const bool needless = plans[p].strict && run.outcome == Outcome::kReconcile;
    if (needless) cell.needless_reconciles++;
    if (run.stale_refusals > 0 && cell.stale_refused++ == 0) cell.stale_variant = plans[p].variant;
    auto keep = [&](std::optional<Counterexample>& best) {
      if (!best || run.picks.size() < best->picks.size()) {
        best = Counterexample{p,         plans[p],    plans[p].variant, run.picks,
                              run.steps, run.outcome, run.figures};
      }
    };
    if (IsFailing(run.outcome)) keep(cell.shortest);
    if (BreaksInvariant(run.outcome) || needless) keep(cell.shortest_unsafe);
    if (follow && plans[p].instances.size() == 1 && variant.schedules == 1) {
      std::vector<std::string> redelivery;  // the second attempt's steps
      for (size_t i = 0; i < run.steps.size(); ++i) {
        if (run.attempts[i] == 2) redelivery.push_back(StepWithoutInstance(run.steps[i]));
      }
      if (!redelivery.empty()) {
        for (Plan& more : fault.follow_up(plans[p], redelivery)) plans.push_back(std::move(more));
      }
    }
  };
  auto add_variants = [&] {
    while (cell.variants.size() < plans.size()) {
      VariantResult v;
      v.variant = plans[cell.variants.size()].variant;
      v.strict = plans[cell.variants.size()].strict;
      cell.variants.push_back(std::move(v));
      done.push_back(false);
    }
  };
  auto now = [] { return std::chrono::steady_clock::now(); };
  for (size_t p = 0; p < plans.size(); ++p) {
    add_variants();
    try {
      for (const Strategy* s : plans[p].subscribers) CheckCrashPoints(*s);
    } catch (const OutOfTime&) {
      // A subscriber's first clean delivery ran into the budget's deadline (a partner
      // checked here for the first time, on a loaded machine): the budget ran out.
      if (budget == nullptr) throw;
      cell.exhaustive = false;
      break;
    }
    if (budget != nullptr && now() >= budget->ordered_until) {
      cell.exhaustive = false;
      break;
    }
    bool complete = true;
    std::function<bool()> stop;
    if (budget != nullptr) stop = [&] { return now() >= budget->ordered_until; };
    const int64_t pruned = ForEachSchedule(
        plans[p], [&](const ScheduleResult& run) { count(p, run); }, stop, &complete);
    add_variants();
    cell.variants[p].pruned = pruned;
    cell.pruned += pruned;
    done[p] = complete;
    if (!complete) {
      cell.exhaustive = false;
      break;
    }
  }
  add_variants();
  if (!cell.exhaustive) {
    Sample(cell, plans, done, *budget, count, add_variants);
    // The walks finished every plan the ordered search left (plans of one instance have one
    // schedule each; on a loaded machine a small cell's ordered share can end before them):
    // every schedule ran, so the cell is exhaustive, not "not exhaustive" of as many as it ran.
    if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) cell.exhaustive = true;
  }
  progress_.done++;
  if (options_.progress) options_.progress(progress_);
  return cell;
}

namespace {

// Picks at random among the eligible instances, and multiplies how many there were: the
// product over a walk is Knuth's estimate of the number of interleavings (each walk's
// estimate is unbiased; their mean converges).
class RandomWalk final : public Chooser {
 public:
  explicit RandomWalk(std::mt19937_64& rng) : rng_(rng) {}
  std::optional<int> Choose(size_t, uint32_t eligible) override {
    const int n = std::popcount(eligible);
    estimate_ *= static_cast<double>(n);
    uint64_t k = rng_() % static_cast<uint64_t>(n);
    for (int i = 0; i < 32; ++i) {
      if ((eligible & (1u << i)) != 0 && k-- == 0) return i;
    }
    return std::nullopt;
  }
  double estimate() const { return estimate_; }

 private:
  std::mt19937_64& rng_;
  double estimate_ = 1;
};

}  // namespace

void Explorer::Sample(CellResult& cell, std::vector<Plan>& plans, std::vector<bool>& done,
                      const CellBudget& budget,
                      const std::function<void(size_t, const ScheduleResult&)>& count,
                      const std::function<void()>& add_variants) {
  // The seed and the fault's name make the walks: the same seed, the same walks (as many as
  // the time allows).
  uint64_t seed = budget.seed;
  for (char c : cell.fault->name) seed = seed * 1099511628211ULL + static_cast<unsigned char>(c);
  std::mt19937_64 rng(seed);
  cell.sample_seed = budget.seed;
  int64_t ordered = cell.schedules;
  std::map<size_t, std::pair<double, int64_t>> estimates;  // plan -> sum of estimates, walks
  // A few walks even past the end, so the estimate has something to stand on (the
  // scheduler's own deadline still stops a run that goes on).
  constexpr int64_t kLeastWalks = 8;
  while (std::chrono::steady_clock::now() < budget.sampled_until || cell.sampled < kLeastWalks) {
    std::vector<size_t> open;
    for (size_t p = 0; p < plans.size(); ++p) {
      if (!done[p]) open.push_back(p);
    }
    if (open.empty()) break;
    const size_t p = open[rng() % open.size()];
    try {
      for (const Strategy* s : plans[p].subscribers) CheckCrashPoints(*s);
    } catch (const OutOfTime&) {
      break;  // as a walk stopped by the deadline
    }
    RandomWalk walk(rng);
    ScheduleResult run = scheduler_.Run(plans[p], walk);
    if (run.out_of_time) break;
    if (run.abandoned) continue;
    count(p, run);
    add_variants();
    cell.sampled++;
    auto& [sum, walks] = estimates[p];
    sum += walk.estimate();
    walks++;
    // A plan with one instance has one schedule: sampled once, it is done.
    if (plans[p].instances.size() == 1) done[p] = true;
  }
  double total = static_cast<double>(ordered);
  for (size_t p = 0; p < plans.size(); ++p) {
    if (done[p] && plans[p].instances.size() == 1 && estimates.count(p) > 0) continue;
    if (done[p]) continue;
    auto it = estimates.find(p);
    // A plan never walked counts as the average of those walked (at least one schedule).
    double mean = 1;
    if (it != estimates.end()) {
      mean = it->second.first / static_cast<double>(it->second.second);
    } else if (!estimates.empty()) {
      double sum = 0;
      int64_t walks = 0;
      for (const auto& [q, e] : estimates) {
        sum += e.first;
        walks += e.second;
      }
      mean = sum / static_cast<double>(walks);
    }
    total += std::max(mean, 1.0);
  }
  // Plans of one instance sampled count once each; the rest are in `total` already.
  for (const auto& [p, e] : estimates) {
    if (plans[p].instances.size() == 1) total += 1;
  }
  cell.estimated = std::max(std::round(total), static_cast<double>(cell.schedules));
}

int64_t Explorer::ForEachSchedule(const Plan& plan,
                                  const std::function<void(const ScheduleResult&)>& each) {
  bool complete = true;
  return ForEachSchedule(plan, each, {}, &complete);
}

int64_t Explorer::ForEachSchedule(const Plan& plan,
                                  const std::function<void(const ScheduleResult&)>& each,
                                  const std::function<bool()>& stop, bool* complete) {
  int64_t pruned = 0;
  *complete = true;
  if (options_.reduce && Reducible(plan)) {
    SourceSetSearch source_sets;
    SleepSetSearch sleep_sets;
    ReducedSearch& search = options_.search == ExploreOptions::Search::kSourceSets
                                ? static_cast<ReducedSearch&>(source_sets)
                                : sleep_sets;
    do {
      ScheduleResult run = scheduler_.Run(plan, search);
      if (run.out_of_time) {
        *complete = false;
        return pruned;
      }
      if (run.abandoned) {
        ++pruned;
      } else {
        each(run);
      }
      search.Finished(!run.abandoned);
      if (stop && stop()) {
        *complete = !search.Next();
        return pruned;
      }
    } while (search.Next());
    return pruned;
  }
  std::vector<int> prefix;
  for (;;) {
    PrefixChooser chooser(prefix);
    ScheduleResult run = scheduler_.Run(plan, chooser);
    if (run.out_of_time) {
      *complete = false;
      return pruned;
    }
    if (run.abandoned) throw std::logic_error("a replay did not follow its own choices");
    each(run);
    if (!NextPrefix(run, prefix)) break;
    if (stop && stop()) {
      *complete = false;
      return pruned;
    }
  }
  return pruned;
}

MatrixResult Explorer::ExploreMatrix(std::span<const Strategy* const> strategies,
                                     std::span<const Fault* const> faults) {
  auto started = std::chrono::steady_clock::now();
  MatrixResult m;
  m.seed = options_.seed;
  m.journal = options_.journal;
  if (options_.postgres != nullptr)
    m.postgres_isolation = std::string(ToString(options_.isolation));
  m.reduced = options_.reduce;
  m.world = options_.world;
  m.strategies.assign(strategies.begin(), strategies.end());
  m.faults.assign(faults.begin(), faults.end());
  ExpectCells(progress_.done + static_cast<int64_t>(strategies.size() * faults.size()));
  std::vector<std::vector<CellResult>> rows(strategies.size());
  if (options_.postgres != nullptr && !options_.postgres_lanes.empty() && strategies.size() > 1) {
    ExploreRowsInLanes(strategies, faults, rows);
  } else {
    for (size_t r = 0; r < strategies.size(); ++r) {
      for (const Fault* f : faults) rows[r].push_back(ExploreCell(*strategies[r], *f));
    }
  }
  for (std::vector<CellResult>& row : rows) {
    for (CellResult& cell : row) {
      m.schedules += cell.schedules;
      m.steps += cell.steps;
      m.pruned += cell.pruned;
      m.cells.push_back(std::move(cell));
    }
  }
  m.elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return m;
}

void Explorer::ExploreRowsInLanes(std::span<const Strategy* const> strategies,
                                  std::span<const Fault* const> faults,
                                  std::vector<std::vector<CellResult>>& cells) {
  // One progress for every lane: each lane's explorer reports its own counts, and what they
  // moved by is added here (under the lock) before the caller's callback is called.
  std::mutex lock;
  ExploreProgress shared = progress_;
  const ExploreProgressFn report = options_.progress;
  auto lane_progress = [&lock, &shared, &report](ExploreProgress last) {
    return [&lock, &shared, &report, last](const ExploreProgress& p) mutable {
      const std::lock_guard<std::mutex> hold(lock);
      shared.done += p.done - last.done;
      shared.schedules += p.schedules - last.schedules;
      last = p;
      if (report) report(shared);
    };
  };
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  auto explore_rows = [&](Explorer& explorer) {
    for (size_t r = next++; r < strategies.size() && !failed; r = next++) {
      for (const Fault* f : faults) cells[r].push_back(explorer.ExploreCell(*strategies[r], *f));
    }
  };
  std::vector<std::exception_ptr> errors(options_.postgres_lanes.size() + 1);
  std::vector<std::thread> lanes;
  for (size_t i = 0; i < options_.postgres_lanes.size(); ++i) {
    ExploreOptions options = options_;
    options.postgres = options_.postgres_lanes[i];
    options.postgres_lanes.clear();
    options.progress = lane_progress({});
    lanes.emplace_back([&, options = std::move(options), i] {
      try {
        Explorer lane(options, extra_);  // its scheduler's fibers live on this thread
        explore_rows(lane);
      } catch (...) {
        errors[i + 1] = std::current_exception();
        failed = true;
      }
    });
  }
  // This explorer's scheduler runs on this thread (its fibers were started here).
  options_.progress = lane_progress(progress_);
  try {
    explore_rows(*this);
  } catch (...) {
    errors[0] = std::current_exception();
    failed = true;
  }
  for (std::thread& lane : lanes) lane.join();
  options_.progress = report;
  progress_ = shared;
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
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
  return Replay(cell, *cell.shortest, recorder);
}

ScheduleResult Explorer::ReplayShortest(const CellResult& cell, Recorder* recorder,
                                        std::vector<TablesSnapshot>* tables) {
  if (!cell.shortest) throw std::logic_error("no failing schedule to replay");
  return Replay(cell, *cell.shortest, recorder, tables);
}

ScheduleResult Explorer::Replay(const CellResult& cell, const Counterexample& c,
                                Recorder* recorder, std::vector<TablesSnapshot>* tables) {
  if (tables == nullptr || recorder == nullptr) {
    std::optional<ScheduleResult> run = RunExactly(c.plan, c.picks, recorder);
    if (!run) {
      throw std::logic_error(fmt::format("{} x {}: the failing schedule did not replay",
                                         cell.strategy->name, cell.fault->name));
    }
    // The class world tells each statement's bound values (the key a record was written
    // under, the clock): a grader's student reads why two records did not meet.
    if (recorder != nullptr) {
      run->deliveries = DeliveriesOf(c.plan, *run, recorder->Events(), options_.graded);
    }
    return *run;
  }
  // On SQLite the explorer's files, each through a read-only connection; on PostgreSQL the
  // schema's tables, committed rows only, one snapshot per step.
  std::unique_ptr<TablesReader> probe = scheduler_.OpenTablesReader();
  // Only one instance runs at a time, and it records its step once the step returned: the
  // probe reads while nothing else moves.
  recorder->SetObserver([&](const TraceEvent& e) { tables->push_back(probe->Read(e)); });
  try {
    ScheduleResult run = Replay(cell, c, recorder);
    recorder->SetObserver(nullptr);
    return run;
  } catch (...) {
    recorder->SetObserver(nullptr);
    throw;
  }
}

std::optional<ScheduleResult> Explorer::RunExactly(const Plan& plan, const std::vector<int>& picks,
                                                   Recorder* recorder) {
  ExactChooser chooser(picks);
  ScheduleResult run = scheduler_.Run(plan, chooser, recorder);
  if (run.abandoned || run.picks.size() != picks.size()) return std::nullopt;
  return run;
}

}  // namespace dedupsim::explore
