#include "bench/strategy.h"

#include <sqlite3.h>

#include <type_traits>

#include "bench/raw_inbox.h"
#include "consumers/check_then_process.h"
#include "consumers/idempotent.h"
#include "consumers/naive.h"
#include "consumers/natural_key.h"
#include "core/clock.h"
#include "sqlite/store.h"

namespace dedupsim {

std::string_view ToString(BenchStrategy strategy) {
  switch (strategy) {
    case BenchStrategy::kRaw:
      return "raw";
    case BenchStrategy::kNaive:
      return "naive";
    case BenchStrategy::kCheckThenProcess:
      return "check-then-process";
    case BenchStrategy::kInbox:
      return "inbox";
    case BenchStrategy::kNaturalKey:
      return "natural-key";
  }
  return "?";
}

const std::vector<BenchStrategy>& AllBenchStrategies() {
  static const std::vector<BenchStrategy> all{BenchStrategy::kRaw, BenchStrategy::kNaive,
                                         BenchStrategy::kCheckThenProcess, BenchStrategy::kInbox,
                                         BenchStrategy::kNaturalKey};
  return all;
}

std::optional<BenchStrategy> ParseBenchStrategy(std::string_view name) {
  for (BenchStrategy s : AllBenchStrategies()) {
    if (ToString(s) == name) return s;
  }
  return std::nullopt;
}

std::string BenchStrategyNames() {
  std::string names;
  for (BenchStrategy s : AllBenchStrategies()) {
    if (!names.empty()) names += ", ";
    names += ToString(s);
  }
  return names;
}

namespace {

// Counts what SQLite itself reports ending: the hooks run inside sqlite3_step, once per
// transaction, and cost a call each.
void CountTransactions(sqlite3* db, TransactionCounts* counts) {
  sqlite3_commit_hook(
      db,
      [](void* arg) {
        static_cast<TransactionCounts*>(arg)->commits++;
        return 0;  // 0: let the commit go ahead
      },
      counts);
  sqlite3_rollback_hook(
      db, [](void* arg) { static_cast<TransactionCounts*>(arg)->rollbacks++; }, counts);
}

// The consumers of lib/consumers on a connection of their own. The counts live on the
// heap so the hooks' pointer stays valid.
template <typename Consumer>
class ConsumerHandler final : public StrategyHandler {
 public:
  explicit ConsumerHandler(const DatabaseFile& db)
      : connection_(db.Connect()),
        store_(connection_),
        counts_(std::make_unique<TransactionCounts>()),
        consumer_(MakeConsumer()) {
    CountTransactions(connection_.handle(), counts_.get());
  }

  bool Handle(const OrderPlaced& m) override {
    if constexpr (std::is_same_v<Consumer, NaiveReserveStock>) {
      consumer_.Handle(m);
      return true;
    } else {
      return consumer_.Handle(m);
    }
  }
  BusyStats busy() const override { return connection_.busy(); }
  TransactionCounts transactions() const override { return *counts_; }
  void OnTransactionChange(std::function<void(bool open)> callback) override {
    connection_.OnTransactionChange(std::move(callback));
  }
  sqlite3* handle() const override { return connection_.handle(); }

 private:
  Consumer MakeConsumer() {
    if constexpr (std::is_same_v<Consumer, NaiveReserveStock>) {
      return Consumer(store_);
    } else {
      return Consumer(store_, clock_);
    }
  }

  Connection connection_;
  SqliteStore store_;  // the consumer's store, over connection_
  SystemClock clock_;
  std::unique_ptr<TransactionCounts> counts_;
  Consumer consumer_;
};

class RawHandler final : public StrategyHandler {
 public:
  explicit RawHandler(const DatabaseFile& db)
      : raw_(db.path(), db.settings().synchronous, db.settings().busy_timeout),
        counts_(std::make_unique<TransactionCounts>()) {
    CountTransactions(raw_.handle(), counts_.get());
  }
  bool Handle(const OrderPlaced& m) override { return raw_.Handle(m); }
  BusyStats busy() const override { return raw_.busy(); }
  TransactionCounts transactions() const override { return *counts_; }
  sqlite3* handle() const override { return raw_.handle(); }

 private:
  RawInbox raw_;
  std::unique_ptr<TransactionCounts> counts_;
};

}  // namespace

std::unique_ptr<StrategyHandler> MakeHandler(BenchStrategy strategy, const DatabaseFile& db) {
  switch (strategy) {
    case BenchStrategy::kRaw:
      return std::make_unique<RawHandler>(db);
    case BenchStrategy::kNaive:
      return std::make_unique<ConsumerHandler<NaiveReserveStock>>(db);
    case BenchStrategy::kCheckThenProcess:
      return std::make_unique<ConsumerHandler<CheckThenProcessReserveStock>>(db);
    case BenchStrategy::kInbox:
      return std::make_unique<ConsumerHandler<IdempotentReserveStock>>(db);
    case BenchStrategy::kNaturalKey:
      return std::make_unique<ConsumerHandler<NaturalKeyReserveStock>>(db);
  }
  return nullptr;
}

}  // namespace dedupsim
