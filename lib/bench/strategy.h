// The ways of consuming OrderPlaced that bench and soak compare, behind one small
// interface so a run treats them alike: the consumers of the registry
// (consumers/registry.h) whose entry says the bench runs them (BenchRole), each on a
// measured session over either backend, and the raw baseline (the inbox's SQL straight on
// the backend's C API). Both come from the run's WorkloadDatabase
// (store/workload_database.h), so nothing here names a backend.
//
// A handler owns its own connection: make it in the thread or process that uses it, after
// any fork, and use it from that thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "consumers/registry.h"
#include "core/message.h"
#include "store/store.h"
#include "store/workload_database.h"

namespace dedupsim {

// One row of the bench: the raw baseline, or an entry of the registry of consumers.
class BenchStrategy {
 public:
  BenchStrategy() = default;  // the raw baseline
  explicit BenchStrategy(const ConsumerEntry& consumer) : consumer_(&consumer) {}
  // The registry's entry; null for the raw baseline.
  const ConsumerEntry* consumer() const { return consumer_; }
  bool raw() const { return consumer_ == nullptr; }
  // "raw", or the entry's name.
  std::string_view name() const { return raw() ? "raw" : consumer_->name; }
  // The baseline does (it is the inbox's SQL); a consumer as its entry says.
  bool promises_exactly_once() const {
    return raw() || consumer_->bench == BenchRole::kRunExactlyOnce;
  }
  bool operator==(const BenchStrategy&) const = default;

 private:
  const ConsumerEntry* consumer_ = nullptr;
};

std::string_view ToString(BenchStrategy strategy);  // its name()
// nullopt for a name that is neither "raw" nor an entry the bench runs.
std::optional<BenchStrategy> ParseBenchStrategy(std::string_view name);
// Every strategy in the order the bench reports them: the baseline first, then the
// registry's entries the bench runs, in the registry's order.
const std::vector<BenchStrategy>& AllBenchStrategies();
std::string BenchStrategyNames();  // "raw, naive, check-then-process, inbox, natural-key"
// The strategies that promise exactly-once (promises_exactly_once), the ones whose broken
// promise makes the bench exit 1, as the help says them: "raw, inbox or natural-key".
std::string ExactlyOnceStrategyNames();
// The strategies that are consumers, all but the baseline, in the registry's order: the
// ones a soak runs (a consumer process handles, is killed, restarts; raw is no consumer).
std::vector<BenchStrategy> ConsumerStrategies();

class StrategyHandler {
 public:
  virtual ~StrategyHandler() = default;
  // Handles one delivery. True when it did the work, false when it skipped a duplicate
  // (naive always works). Throws StoreError on a real failure.
  virtual bool Handle(const OrderPlaced& m) = 0;
  // What the handler's connection counted of itself (store/workload_database.h).
  virtual const MeasuredConnection& measured() const = 0;
  BusyStats busy() const { return measured().busy(); }
  TransactionCounts transactions() const { return measured().transactions(); }
  int64_t statements() const { return measured().statements(); }
  std::optional<bool> synchronous_commit() const { return measured().synchronous_commit(); }
  // See MeasuredConnection::OnTransactionChange; the raw baseline does not report.
  virtual void OnTransactionChange(std::function<void(bool open)> callback) = 0;
};

// The registry entry's handler on the session's store.
std::unique_ptr<StrategyHandler> HandlerOn(const ConsumerEntry& consumer,
                                           std::unique_ptr<MeasuredSession> session);
// The raw baseline's handler.
std::unique_ptr<StrategyHandler> HandlerOn(std::unique_ptr<RawInbox> raw);

// Opens a connection to db and returns the strategy's handler on it.
std::unique_ptr<StrategyHandler> MakeHandler(BenchStrategy strategy, const WorkloadDatabase& db);

}  // namespace dedupsim
