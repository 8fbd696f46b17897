// dedupsim bench: the same seeded workload through each strategy, each on a fresh
// database, timed and then checked against the database. K instances compete for the
// deliveries (threads, or processes forked before any connection opens). What comes back
// is measured: throughput from the instances' own clocks, transactions from SQLite's
// commit and rollback hooks, waits from the busy handlers, doubles and losses from the
// StockItems rows read after the run.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "bench/strategy.h"
#include "bench/workload.h"
#include "lesson/scenario.h"
#include "store/databases.h"
#include "world/broker/broker.h"

namespace dedupsim {

struct BenchOptions {
  WorkloadSpec workload;
  int instances = 1;  // consumer instances competing for the deliveries
  InstanceMode mode = InstanceMode::kThreads;
  std::vector<BenchStrategy> strategies = AllBenchStrategies();
  DatabaseSettings settings;  // journal, synchronous, busy timeout
  int repeat = 1;             // rounds; each strategy reports its median round
  // False: no automatic WAL checkpoint while the deliveries are timed (wal_autocheckpoint 0
  // on each instance's connection), so the figures show what the strategy costs without
  // SQLite's checkpoint work. True, the default, is what a real consumer pays.
  bool checkpoints_in_loop = true;
  // Where each run's database is made (store/databases.h; the caller owns it): on
  // PostgreSQL the schema every strategy runs in (each round empties and restocks its
  // tables). Null: SQLite, a new temporary file each round.
  const Databases* databases = nullptr;
  bool synchronous_commit = true;  // PostgreSQL: each instance's session setting

  bool postgres() const { return databases != nullptr && databases->backend() == "postgres"; }
  // A broker the deliveries also go through (bench --broker): each strategy then runs a
  // second time per round, on a fresh database, with every delivery published to a new
  // queue on this broker and one consumer receiving, handling and acking them one at a
  // time. Null: the database-only run alone. Needs one instance (threads): a Broker is
  // one consumer connection, driven by one thread.
  const BrokerFactory* brokers = nullptr;
};

// One strategy's run through the broker: the workload published, then received, handled
// and acked by one consumer. The counts are the broker's answers (BrokerStats: publish
// acks, deliveries handed out, acks taken); the effects are read from the database.
struct BrokerRun {
  std::string server;                           // what answered: "NATS JetStream 2.9.10"
  std::chrono::nanoseconds publish_elapsed{0};  // publishing every delivery, acks awaited
  std::chrono::nanoseconds elapsed{0};          // the first receive to the last ack
  double publish_per_second = 0;
  double messages_per_second = 0;  // deliveries received, handled and acked per second
  std::chrono::nanoseconds p50{0};  // one receive + handle + ack
  std::chrono::nanoseconds p99{0};
  BrokerStats stats;      // sent, accepted, deliveries, acked, redelivered, as the broker answered
  int64_t processed = 0;  // deliveries the handler did the work for
  int64_t skipped = 0;    // deliveries it skipped as duplicates
  int64_t ack_refused = 0;  // acks the broker did not take (Ack returned false)
  EffectCheck check;        // read from the database after the run
  std::vector<double> round_messages_per_second;  // every round, in order
};

struct StrategyResult {
  BenchStrategy strategy;  // the raw baseline until set
  int64_t messages = 0;
  int64_t processed = 0;  // deliveries the handler reported doing the work for
  int64_t skipped = 0;    // deliveries it skipped as duplicates
  TransactionCounts transactions;
  std::chrono::nanoseconds elapsed{0};  // first instance's start to the last one's end
  double messages_per_second = 0;
  double transactions_per_second = 0;  // (commits + rollbacks) per second
  std::chrono::nanoseconds p50{0};     // latency of one Handle call
  std::chrono::nanoseconds p99{0};
  BusyStats busy;                                 // summed over the instances
  int64_t statements = 0;  // PostgreSQL: statements the instances sent (round trips)
  // PostgreSQL: synchronous_commit as the server reported it on every instance's
  // connection ("on", "off"; "mixed" if they differed).
  std::string synchronous_commit;
  EffectCheck check;                              // read from the database after the run
  std::vector<double> round_messages_per_second;  // every round, in order
  // BenchStrategy::promises_exactly_once: the raw baseline and the registry's entries that
  // say so (raw, inbox and natural-key) promise each order once, and for them a failed
  // check is a failure. The others (naive, check-then-process) show what goes wrong.
  bool promises_exactly_once = false;
  // The same strategy through the broker (options.brokers), its median round.
  std::optional<BrokerRun> broker;
};

struct BenchReport {
  BenchOptions options;
  int64_t distinct_orders = 0;
  int64_t duplicates = 0;
  std::vector<StrategyResult> results;  // in the order of options.strategies
  // The same run's ratios of messages per second, when both strategies ran.
  std::optional<double> inbox_to_raw;
  std::optional<double> inbox_to_naive;

  // True when every strategy that promises exactly-once kept it, through the broker too.
  bool promises_held() const;
};

// Told how a run is going; nothing in the bench prints. Called from the thread that
// called RunBench, about ten times a second while a strategy runs.
class BenchProgress {
 public:
  virtual ~BenchProgress() = default;
  virtual void Started(BenchStrategy strategy, int round, int rounds, int64_t total) = 0;
  virtual void Advanced(int64_t handled, std::chrono::nanoseconds elapsed) = 0;
  virtual void Finished() = 0;
};

// Thrown by RunBench when interrupted() said so: the instances were stopped after their
// current delivery and the temporary databases removed.
class BenchInterrupted : public std::runtime_error {
 public:
  BenchInterrupted() : std::runtime_error("bench interrupted") {}
};

// Runs every strategy of options, options.repeat times, interleaved (round 1 runs each
// strategy once, then round 2...), each time on a new temporary SQLite file with the
// options' settings (in $TMPDIR), or on options.databases' when given (PostgreSQL's schema,
// emptied and restocked). progress and interrupted may be null; interrupted is polled every
// few milliseconds while instances run. Throws std::invalid_argument for options out of
// range, DatabaseError (or UnplannedDeath) when an instance fails, BenchInterrupted.
BenchReport RunBench(const BenchOptions& options, BenchProgress* progress,
                     const std::function<bool()>& interrupted = nullptr);

}  // namespace dedupsim
