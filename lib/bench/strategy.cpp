#include "bench/strategy.h"

#include <sqlite3.h>


#include "bench/raw_inbox.h"
#include "core/clock.h"
#include "sqlite/store.h"

namespace dedupsim {

std::string_view ToString(BenchStrategy strategy) { return strategy.name(); }

const std::vector<BenchStrategy>& AllBenchStrategies() {
  static const std::vector<BenchStrategy> all = [] {
    std::vector<BenchStrategy> strategies{BenchStrategy()};
    for (const ConsumerEntry* c : AllConsumers()) {
      if (c->bench != BenchRole::kNotRun) strategies.emplace_back(*c);
    }
    return strategies;
  }();
  return all;
}

std::optional<BenchStrategy> ParseBenchStrategy(std::string_view name) {
  for (BenchStrategy s : AllBenchStrategies()) {
    if (s.name() == name) return s;
  }
  return std::nullopt;
}

std::string BenchStrategyNames() {
  std::string names;
  for (BenchStrategy s : AllBenchStrategies()) {
    if (!names.empty()) names += ", ";
    names += s.name();
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

// A connection of its own, the consumer's store over it. The counts live on the heap so
// the hooks' pointer stays valid.
class SqliteSession final : public BenchSession {
 public:
  explicit SqliteSession(const DatabaseFile& db)
      : connection_(db.Connect()),
        store_(connection_),
        counts_(std::make_unique<TransactionCounts>()) {
    CountTransactions(connection_.handle(), counts_.get());
  }

  Store& store() override { return store_; }
  BusyStats busy() const override { return connection_.busy(); }
  TransactionCounts transactions() const override { return *counts_; }
  void OnTransactionChange(std::function<void(bool open)> callback) override {
    connection_.OnTransactionChange(std::move(callback));
  }
  sqlite3* handle() const override { return connection_.handle(); }

 private:
  Connection connection_;
  SqliteStore store_;
  std::unique_ptr<TransactionCounts> counts_;
};

// A registry entry's handler on a session, whatever its backend.
class ConsumerHandler final : public StrategyHandler {
 public:
  ConsumerHandler(const ConsumerEntry& consumer, std::unique_ptr<BenchSession> session)
      : consumer_(consumer), session_(std::move(session)) {}

  bool Handle(const OrderPlaced& m) override {
    ConsumerEnv env{session_->store(), clock_, nullptr, nullptr};
    return consumer_.handle(env, m) == DeliveryResult::kProcessed;
  }
  BusyStats busy() const override { return session_->busy(); }
  TransactionCounts transactions() const override { return session_->transactions(); }
  void OnTransactionChange(std::function<void(bool open)> callback) override {
    session_->OnTransactionChange(std::move(callback));
  }
  sqlite3* handle() const override { return session_->handle(); }
  int64_t statements() const override { return session_->statements(); }
  std::optional<bool> synchronous_commit() const override {
    return session_->synchronous_commit();
  }

 private:
  const ConsumerEntry& consumer_;
  std::unique_ptr<BenchSession> session_;
  SystemClock clock_;
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

std::unique_ptr<StrategyHandler> HandlerOn(const ConsumerEntry& consumer,
                                           std::unique_ptr<BenchSession> session) {
  return std::make_unique<ConsumerHandler>(consumer, std::move(session));
}

std::unique_ptr<StrategyHandler> MakeHandler(BenchStrategy strategy, const DatabaseFile& db) {
  if (strategy.raw()) return std::make_unique<RawHandler>(db);
  return HandlerOn(*strategy.consumer(), std::make_unique<SqliteSession>(db));
}

}  // namespace dedupsim
