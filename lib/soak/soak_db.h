// Where a soak runs, for the supervisor and its consumers alike: the inventory and the
// effects in a database (a SQLite file or a PostgreSQL schema, store/workload_database.h),
// the deliveries in that database's durable queue (store/durable_queue.h) or in a NATS
// JetStream stream (nats_queue.h). SetUp and Read run in the supervisor while no consumer lives; Open* run
// in a consumer, after fork, and open connections of its own, which the caller then owns.
//
// A SoakDb keeps references to what it was made with (the database, the inner SoakDb, the
// options): they must outlive it. It holds no connection between calls, so one SoakDb
// serves every process of a run. Failures are thrown: DatabaseError (a StoreError) from the
// database, BrokerError from NATS.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "bench/strategy.h"
#include "bench/workload.h"
#include "soak/soak.h"
#include "store/durable_queue.h"
#include "store/workload_database.h"

namespace dedupsim {

class SoakDb {
 public:
  virtual ~SoakDb() = default;
  // Empties what a run writes and fills the inventory and the broker.
  virtual void SetUp(const Workload& workload) const = 0;
  virtual std::unique_ptr<StrategyHandler> OpenHandler(BenchStrategy strategy) const = 0;
  // The broker on a connection of its own; count_open hears its transactions.
  virtual std::unique_ptr<BrokerQueue> OpenBroker(
      std::chrono::milliseconds lease, int64_t consumer,
      const std::function<void(bool open)>& count_open) const = 0;
  // Reads the broker's counts and the effects into report. Where the broker is the
  // database's own table, an order never applied no copy of which was acked is told apart
  // as not reached (EffectCheck::not_reached).
  virtual void Read(SoakReport& report, const Workload& workload) const = 0;
  // The effects only, every order never applied counted lost: for a broker elsewhere
  // (NATS), whose table here was not used.
  virtual void ReadEffects(SoakReport& report, const Workload& workload) const = 0;
};

// A database, SQLite's or PostgreSQL's: the broker is its durable queue, each consumer's
// connections its own.
class DatabaseSoakDb final : public SoakDb {
 public:
  explicit DatabaseSoakDb(const WorkloadDatabase& db) : db_(db) {}
  void SetUp(const Workload& workload) const override;
  std::unique_ptr<StrategyHandler> OpenHandler(BenchStrategy strategy) const override;
  std::unique_ptr<BrokerQueue> OpenBroker(
      std::chrono::milliseconds lease, int64_t consumer,
      const std::function<void(bool open)>& count_open) const override;
  void Read(SoakReport& report, const Workload& workload) const override;
  void ReadEffects(SoakReport& report, const Workload& workload) const override;

 private:
  const WorkloadDatabase& db_;
};

// The soak's database, as options.databases makes it (null: SQLite, the file
// options.db_path names, or a new temporary one removed afterwards), its DatabaseSoakDb
// handed to run. Every consumer is gone before the supervisor connects again
// (SoakDb::Read). A database error comes out as the database says it (SQLite's naming the
// file); a broker's error names the broker and comes out as it is.
void RunOnDatabase(const SoakOptions& options, const std::function<void(const SoakDb&)>& run);

// The deliveries through NATS JetStream (options.nats_url, options.nats_stream), the
// inventory and the effects in the database of `inner` (its broker table is not used).
// cnats runs threads, so this process never uses it before its last fork: the stream is
// set up by a child of its own, each consumer connects after fork, and the counts are read
// once every consumer is gone.
class NatsSoakDb final : public SoakDb {
 public:
  NatsSoakDb(const SoakDb& inner, const SoakOptions& options) : inner_(inner), options_(options) {}
  void SetUp(const Workload& workload) const override;
  std::unique_ptr<StrategyHandler> OpenHandler(BenchStrategy strategy) const override;
  std::unique_ptr<BrokerQueue> OpenBroker(
      std::chrono::milliseconds lease, int64_t consumer,
      const std::function<void(bool open)>& count_open) const override;
  // The server's counts; the stream is deleted unless the run was a --role supervisor's.
  void Read(SoakReport& report, const Workload& workload) const override;
  void ReadEffects(SoakReport& report, const Workload& workload) const override;

 private:
  const SoakDb& inner_;
  const SoakOptions& options_;
};

}  // namespace dedupsim
