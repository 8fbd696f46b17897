// The ways of consuming OrderPlaced that bench and soak compare, behind one small
// interface so a run treats them alike: the consumers of the registry
// (consumers/registry.h) whose entry says the bench runs them (BenchRole), each on a store
// over either backend, and the raw baseline (the inbox's SQL straight on the sqlite3 C API,
// see raw_inbox.h, or on libpq, pg_bench.cpp).
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
#include "sqlite/connection.h"
#include "sqlite/database.h"
#include "store/store.h"

struct sqlite3;

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

// Transactions the handler's connection ended, counted by SQLite's commit and rollback
// hooks: what the database did, not what the consumer meant to do.
struct TransactionCounts {
  int64_t commits = 0;
  int64_t rollbacks = 0;
};

class StrategyHandler {
 public:
  virtual ~StrategyHandler() = default;
  // Handles one delivery. True when it did the work, false when it skipped a duplicate
  // (naive always works). Throws SqliteError on a real failure.
  virtual bool Handle(const OrderPlaced& m) = 0;
  virtual BusyStats busy() const = 0;
  virtual TransactionCounts transactions() const = 0;
  // See Connection::OnTransactionChange; the raw baseline does not report.
  virtual void OnTransactionChange(std::function<void(bool open)> /*callback*/) {}
  // The handler's SQLite connection, for reading SQLite's own counters (tests); null on
  // PostgreSQL.
  virtual sqlite3* handle() const = 0;
  // PostgreSQL: statements sent to the server so far (one round trip each), as the
  // connection counted them; 0 on SQLite, which does not count.
  virtual int64_t statements() const { return 0; }
  // PostgreSQL: synchronous_commit as the server reported it for this connection.
  virtual std::optional<bool> synchronous_commit() const { return std::nullopt; }
};

// A handler's connection seen through the store seam: what a consumer of the registry runs
// on, and what the bench reads of the connection. One per backend (SQLite here, PostgreSQL
// in pg_bench.cpp); the consumer's handler is the same on both (HandlerOn).
class BenchSession {
 public:
  virtual ~BenchSession() = default;
  virtual Store& store() = 0;
  virtual BusyStats busy() const = 0;
  virtual TransactionCounts transactions() const = 0;
  virtual void OnTransactionChange(std::function<void(bool open)> callback) = 0;
  virtual sqlite3* handle() const { return nullptr; }
  virtual int64_t statements() const { return 0; }
  virtual std::optional<bool> synchronous_commit() const { return std::nullopt; }
};

// The registry entry's handler on the session's store.
std::unique_ptr<StrategyHandler> HandlerOn(const ConsumerEntry& consumer,
                                           std::unique_ptr<BenchSession> session);

// Opens a connection to db and returns the strategy's consumer on it.
std::unique_ptr<StrategyHandler> MakeHandler(BenchStrategy strategy, const DatabaseFile& db);

}  // namespace dedupsim
