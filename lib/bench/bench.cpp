#include "bench/bench.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <stdexcept>
#include <thread>

#include "backends/databases.h"
#include "bench/shared_block.h"
#include "lesson/crash.h"
#include "os/child_process.h"
#include "os/pipe_io.h"
#include "os/process_error.h"

namespace dedupsim {

namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr int kInstanceFailed = 70;  // a child instance's exit status: see its slot

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now().time_since_epoch())
      .count();
}

void Validate(const BenchOptions& o) {
  if (o.workload.messages < 1 || o.workload.messages > 10'000'000) {
    throw std::invalid_argument("--messages must be within [1, 10000000]");
  }
  if (!(o.workload.duplicate_rate >= 0.0 && o.workload.duplicate_rate <= 1.0)) {
    throw std::invalid_argument("--duplicate-rate must be within [0, 1]");
  }
  if (o.instances < 1 || o.instances > 64) {
    throw std::invalid_argument("--instances-count must be within [1, 64]");
  }
  if (o.repeat < 1 || o.repeat > 100)
    throw std::invalid_argument("--repeat must be within [1, 100]");
  if (o.strategies.empty()) throw std::invalid_argument("no strategy to run");
  if (o.workload.books < 0) throw std::invalid_argument("--books must be at least 0");
  if (o.brokers != nullptr && (o.instances != 1 || o.mode != InstanceMode::kThreads)) {
    throw std::invalid_argument(
        "--broker runs one consumer instance (a thread): a broker queue is read here by one "
        "consumer connection, driven by one thread; not with --instances-count or --instances "
        "processes");
  }
}

// Opens one instance's handler: in the thread or process that uses it.
using OpenHandler = std::function<std::unique_ptr<StrategyHandler>()>;

// One consumer instance: opens its handler (its own connection), waits for the start,
// then takes deliveries until none are left. Never throws: a failure goes to its slot.
void RunInstance(const OpenHandler& open, const Workload& workload, SharedBlock& shared,
                 size_t index) {
  InstanceSlot& slot = shared.slot(index);
  bool ready = false;
  try {
    std::unique_ptr<StrategyHandler> handler = open();
    if (auto on = handler->synchronous_commit()) slot.synchronous_commit = *on ? 1 : 0;
    const int64_t statements_before = handler->statements();
    shared.ready().fetch_add(1);
    ready = true;
    while (shared.go().load(std::memory_order_acquire) == 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    const auto total = static_cast<int64_t>(workload.deliveries.size());
    int64_t* latencies = shared.latencies_ns();
    int8_t* outcomes = shared.outcomes();
    slot.started_ns = NowNs();
    for (;;) {
      int64_t i = shared.next().fetch_add(1, std::memory_order_relaxed);
      if (i >= total) break;
      auto at = static_cast<size_t>(i);
      auto begin = SteadyClock::now();
      bool processed = handler->Handle(workload.deliveries[at]);
      auto end = SteadyClock::now();
      latencies[at] = std::chrono::duration_cast<std::chrono::nanoseconds>(end - begin).count();
      outcomes[at] = processed ? 1 : 2;
      slot.handled++;
      shared.done().fetch_add(1, std::memory_order_relaxed);
    }
    slot.ended_ns = NowNs();
    slot.busy_calls = handler->busy().calls;
    slot.busy_waited_us = handler->busy().waited.count();
    slot.commits = handler->transactions().commits;
    slot.rollbacks = handler->transactions().rollbacks;
    slot.statements = handler->statements() - statements_before;
  } catch (const std::exception& e) {
    slot.failed = 1;
    std::snprintf(slot.error, sizeof slot.error, "%s", e.what());
    if (!ready) shared.ready().fetch_add(1);
  }
  shared.finished().fetch_add(1, std::memory_order_release);
}

// Starts the instances, releases them together, reports progress until all are done.
void RunInstances(const BenchOptions& options, BenchStrategy strategy, const OpenHandler& open,
                  const Workload& workload, SharedBlock& shared, BenchProgress* progress,
                  const std::function<bool()>& interrupted) {
  const auto k = static_cast<size_t>(options.instances);
  std::vector<std::thread> threads;
  std::vector<ChildProcess> children;  // killed and reaped, if still running, on a throw
  std::string death;
  // Judges each child that ended (block: waits for every one); the first death nobody
  // planned is kept.
  auto reap = [&](bool block) {
    for (ChildProcess& child : children) {
      if (!child.unreaped()) continue;
      if (block) {
        child.Wait();
      } else if (!child.TryWait()) {
        continue;
      }
      const std::optional<int> status = child.status();
      // Exit 0: done; kInstanceFailed: the error is in its slot. Anything else is a death,
      // an unknown status too.
      const bool planned = status && WIFEXITED(*status) &&
                           (WEXITSTATUS(*status) == 0 || WEXITSTATUS(*status) == kInstanceFailed);
      if (!planned && death.empty()) {
        death = !status ? fmt::format("bench instance (pid {}) {}", child.pid(),
                                      DescribeWaitStatus(status))
                : WIFSIGNALED(*status)
                    ? fmt::format("bench instance (pid {}) was killed by signal {}", child.pid(),
                                  WTERMSIG(*status))
                    : fmt::format("bench instance (pid {}) exited with status {}", child.pid(),
                                  WEXITSTATUS(*status));
      }
    }
  };
  auto live = [&] {
    return std::count_if(children.begin(), children.end(),
                         [](const ChildProcess& c) { return c.unreaped(); });
  };

  for (size_t i = 0; i < k; ++i) {
    if (options.mode == InstanceMode::kThreads) {
      threads.emplace_back([&, i] { RunInstance(open, workload, shared, i); });
      continue;
    }
    ChildProcess child;
    try {
      child = ChildProcess::Fork();  // dies with the bench
    } catch (const ProcessError&) {
      shared.go().store(1);  // let those started run out, then fail
      for (auto& t : threads) t.join();
      reap(true);
      throw;
    }
    if (child.in_child()) {
      ::signal(SIGINT, SIG_IGN);  // Ctrl-C is the parent's to handle
      RunInstance(open, workload, shared, i);
      // No destructors in the child: the parent owns the database file.
      ::_exit(shared.slot(i).failed ? kInstanceFailed : 0);
    }
    children.push_back(std::move(child));
  }

  while (shared.ready().load() < options.instances) {
    if (options.mode == InstanceMode::kProcesses) {
      reap(false);
      if (!death.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  const auto started = SteadyClock::now();
  shared.go().store(1, std::memory_order_release);

  auto last_report = started;
  bool stopped = false;
  for (;;) {
    if (!stopped && interrupted && interrupted()) {
      // No instance takes another delivery; each ends after the one it is handling.
      shared.next().store(static_cast<int64_t>(workload.deliveries.size()));
      stopped = true;
    }
    if (options.mode == InstanceMode::kProcesses) {
      reap(false);
      if (live() == 0) break;
    } else if (shared.finished().load(std::memory_order_acquire) == options.instances) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    auto now = SteadyClock::now();
    if (progress != nullptr && now - last_report >= std::chrono::milliseconds(100)) {
      progress->Advanced(shared.done().load(std::memory_order_relaxed), now - started);
      last_report = now;
    }
  }
  for (auto& t : threads) t.join();
  if (stopped) throw BenchInterrupted();
  if (!death.empty()) throw UnplannedDeath(death);
  for (size_t i = 0; i < k; ++i) {
    if (shared.slot(i).failed) {
      throw DatabaseError(
          fmt::format("{} instance {}: {}", ToString(strategy), i + 1, shared.slot(i).error));
    }
  }
}

std::chrono::nanoseconds Percentile(std::vector<int64_t>& values, double p) {
  if (values.empty()) return std::chrono::nanoseconds(0);
  auto rank = static_cast<size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(rank),
                   values.end());
  return std::chrono::nanoseconds(values[rank]);
}

// The figures of one run, from the instances' slots and outcomes.
StrategyResult Collect(const BenchOptions& options, BenchStrategy strategy, SharedBlock& shared,
                       size_t n);

// The database of one run of a strategy: on PostgreSQL the options' schema, on SQLite a new
// temporary file with the options' settings (removed with this object); stocked with the
// workload's books and settled, so every strategy starts alike.
class RunDatabase {
 public:
  RunDatabase(const BenchOptions& options, const Workload& workload) {
    std::unique_ptr<Databases> sqlite;  // no databases given: new temporary SQLite files
    if (options.databases == nullptr) sqlite = OpenDatabases(DatabaseChoice{});
    const Databases& databases = sqlite ? *sqlite : *options.databases;
    db_ = databases.CreateWorkload(WorkloadSettings{.file = options.settings,
                                                    .automatic_checkpoints =
                                                        options.checkpoints_in_loop,
                                                    .synchronous_commit =
                                                        options.synchronous_commit});
    db_->StockBooks(workload.books);  // every strategy starts from empty tables
    db_->Settle();
  }
  const WorkloadDatabase& operator*() const { return *db_; }
  const WorkloadDatabase* operator->() const { return db_.get(); }

 private:
  std::unique_ptr<WorkloadDatabase> db_;  // SQLite's temporary file goes with it
};

StrategyResult RunOnce(const BenchOptions& options, BenchStrategy strategy, const Workload& workload,
                       BenchProgress* progress, const std::function<bool()>& interrupted) {
  const size_t n = workload.deliveries.size();
  RunDatabase db(options, workload);
  SharedBlock shared(n, static_cast<size_t>(options.instances));
  try {
    RunInstances(
        options, strategy, [&] { return MakeHandler(strategy, *db); }, workload, shared, progress,
        interrupted);
  } catch (const DatabaseError& e) {
    db->Rethrow(e);  // SQLite: every database error names the file
  }
  StrategyResult r = Collect(options, strategy, shared, n);
  r.check = CheckEffects(*db, workload);
  return r;
}

StrategyResult Collect(const BenchOptions& options, BenchStrategy strategy, SharedBlock& shared,
                       size_t n) {
  StrategyResult r;
  r.strategy = strategy;
  r.messages = static_cast<int64_t>(n);
  r.promises_exactly_once = strategy.promises_exactly_once();
  int64_t first_start = INT64_MAX, last_end = 0;
  for (size_t i = 0; i < static_cast<size_t>(options.instances); ++i) {
    const InstanceSlot& slot = shared.slot(i);
    first_start = std::min(first_start, slot.started_ns);
    last_end = std::max(last_end, slot.ended_ns);
    r.busy.calls += slot.busy_calls;
    r.busy.waited += std::chrono::microseconds(slot.busy_waited_us);
    r.transactions.commits += slot.commits;
    r.transactions.rollbacks += slot.rollbacks;
    r.statements += slot.statements;
    if (slot.synchronous_commit >= 0) {
      std::string said = slot.synchronous_commit == 1 ? "on" : "off";
      r.synchronous_commit =
          r.synchronous_commit.empty() || r.synchronous_commit == said ? said : "mixed";
    }
  }
  r.elapsed = std::chrono::nanoseconds(last_end - first_start);
  std::vector<int64_t> latencies;
  latencies.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (shared.outcomes()[i] == 1) r.processed++;
    if (shared.outcomes()[i] == 2) r.skipped++;
    if (shared.outcomes()[i] != 0) latencies.push_back(shared.latencies_ns()[i]);
  }
  r.p50 = Percentile(latencies, 0.50);
  r.p99 = Percentile(latencies, 0.99);
  const double seconds = std::chrono::duration<double>(r.elapsed).count();
  if (seconds > 0) {
    r.messages_per_second = static_cast<double>(r.processed + r.skipped) / seconds;
    r.transactions_per_second =
        static_cast<double>(r.transactions.commits + r.transactions.rollbacks) / seconds;
  }
  return r;
}

// One strategy through the broker: a fresh database (or the schema, emptied and
// restocked), a new queue on the broker, every delivery of the workload published to it
// (a duplicate is a second message with the same MessageId, as a producer's resend), then
// one consumer receiving, handling and acking one delivery at a time until the broker says
// nothing more will come. The queue is deleted when the broker is destroyed.
BrokerRun RunThroughBroker(const BenchOptions& options, BenchStrategy strategy,
                           const Workload& workload, BenchProgress* progress,
                           const std::function<bool()>& interrupted) {
  RunDatabase db(options, workload);  // outlives the handler
  std::unique_ptr<StrategyHandler> handler = MakeHandler(strategy, *db);
  BrokerRun run;
  try {
    SystemClock clock;
    BrokerOptions broker_options;
    // Every delivery is acked at once; a redelivery timer far beyond any handling time, so
    // a loaded machine makes no redelivery the bench did not ask for.
    broker_options.ack_wait = std::chrono::seconds(30);
    std::unique_ptr<Broker> broker = options.brokers->Open(clock, broker_options, nullptr);
    run.server = broker->server();

    const auto publish_start = SteadyClock::now();
    for (const OrderPlaced& m : workload.deliveries) {
      if (interrupted && interrupted()) throw BenchInterrupted();
      broker->Send(m);
    }
    run.publish_elapsed = SteadyClock::now() - publish_start;

    std::vector<int64_t> latencies;
    latencies.reserve(workload.deliveries.size());
    const auto start = SteadyClock::now();
    auto last_report = start;
    for (;;) {
      if (interrupted && interrupted()) throw BenchInterrupted();
      const auto begin = SteadyClock::now();
      std::optional<Delivery> d = broker->Receive();
      if (!d) break;
      if (handler->Handle(d->message)) {
        run.processed++;
      } else {
        run.skipped++;
      }
      if (!broker->Ack(*d)) run.ack_refused++;
      const auto end = SteadyClock::now();
      latencies.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(end - begin).count());
      if (progress != nullptr && end - last_report >= std::chrono::milliseconds(100)) {
        progress->Advanced(run.processed + run.skipped, end - start);
        last_report = end;
      }
    }
    run.elapsed = SteadyClock::now() - start;
    run.stats = broker->stats();
    run.p50 = Percentile(latencies, 0.50);
    run.p99 = Percentile(latencies, 0.99);
  } catch (const DatabaseError& e) {
    if (dynamic_cast<const BrokerError*>(&e) == nullptr) db->Rethrow(e);
    throw;  // the broker's errors name the broker
  }
  handler.reset();
  run.check = CheckEffects(*db, workload);
  const double seconds = std::chrono::duration<double>(run.elapsed).count();
  if (seconds > 0) {
    run.messages_per_second = static_cast<double>(run.processed + run.skipped) / seconds;
  }
  const double publish_seconds = std::chrono::duration<double>(run.publish_elapsed).count();
  if (publish_seconds > 0) {
    run.publish_per_second = static_cast<double>(run.stats.sent) / publish_seconds;
  }
  return run;
}

}  // namespace

bool BenchReport::promises_held() const {
  return std::all_of(results.begin(), results.end(), [](const StrategyResult& r) {
    return !r.promises_exactly_once ||
           (r.check.held() && (!r.broker || r.broker->check.held()));
  });
}

BenchReport RunBench(const BenchOptions& options, BenchProgress* progress,
                     const std::function<bool()>& interrupted) {
  Validate(options);
  BenchReport report;
  report.options = options;
  // Each strategy once, in the order first given.
  report.options.strategies.clear();
  for (BenchStrategy s : options.strategies) {
    if (std::find(report.options.strategies.begin(), report.options.strategies.end(), s) ==
        report.options.strategies.end()) {
      report.options.strategies.push_back(s);
    }
  }
  const std::vector<BenchStrategy>& strategies = report.options.strategies;
  Workload workload = MakeWorkload(options.workload);
  report.distinct_orders = static_cast<int64_t>(workload.orders.size());
  report.duplicates = workload.duplicates;

  std::vector<std::vector<StrategyResult>> rounds(strategies.size());
  std::vector<std::vector<BrokerRun>> broker_rounds(strategies.size());
  auto step = [&](BenchStrategy strategy, int round, const std::function<void()>& body) {
    if (progress != nullptr) {
      progress->Started(strategy, round, options.repeat, options.workload.messages);
    }
    try {
      body();
    } catch (...) {
      if (progress != nullptr) progress->Finished();
      throw;
    }
    if (progress != nullptr) progress->Finished();
  };
  for (int round = 1; round <= options.repeat; ++round) {
    for (size_t s = 0; s < strategies.size(); ++s) {
      step(strategies[s], round, [&] {
        rounds[s].push_back(RunOnce(options, strategies[s], workload, progress, interrupted));
      });
      if (options.brokers == nullptr) continue;
      step(strategies[s], round, [&] {
        broker_rounds[s].push_back(
            RunThroughBroker(options, strategies[s], workload, progress, interrupted));
      });
    }
  }
  for (auto& runs : rounds) {
    std::vector<double> in_order;
    for (const StrategyResult& r : runs) in_order.push_back(r.messages_per_second);
    std::sort(runs.begin(), runs.end(), [](const StrategyResult& a, const StrategyResult& b) {
      return a.messages_per_second < b.messages_per_second;
    });
    StrategyResult median = runs[(runs.size() - 1) / 2];
    median.round_messages_per_second = in_order;
    // A check that failed in any round counts, not just the median's.
    for (const StrategyResult& r : runs) {
      if (!r.check.held() && median.check.held()) median.check = r.check;
    }
    report.results.push_back(std::move(median));
  }
  for (size_t s = 0; s < broker_rounds.size(); ++s) {
    std::vector<BrokerRun>& runs = broker_rounds[s];
    if (runs.empty()) continue;
    std::vector<double> in_order;
    for (const BrokerRun& r : runs) in_order.push_back(r.messages_per_second);
    std::sort(runs.begin(), runs.end(), [](const BrokerRun& a, const BrokerRun& b) {
      return a.messages_per_second < b.messages_per_second;
    });
    BrokerRun median = runs[(runs.size() - 1) / 2];
    median.round_messages_per_second = in_order;
    for (const BrokerRun& r : runs) {
      if (!r.check.held() && median.check.held()) median.check = r.check;
    }
    report.results[s].broker = std::move(median);
  }

  auto mps = [&](std::string_view name) -> std::optional<double> {
    for (const StrategyResult& r : report.results) {
      if (r.strategy.name() == name) return r.messages_per_second;
    }
    return std::nullopt;
  };
  auto inbox = mps("inbox");
  auto raw = mps("raw");
  auto naive = mps("naive");
  if (inbox && raw && *raw > 0) report.inbox_to_raw = *inbox / *raw;
  if (inbox && naive && *naive > 0) report.inbox_to_naive = *inbox / *naive;
  return report;
}

}  // namespace dedupsim
