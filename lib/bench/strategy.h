// The ways of consuming OrderPlaced that bench and soak compare, behind one small
// interface so a run treats them alike: the four consumers of lib/consumers, and the raw
// baseline (the inbox's SQL straight on the sqlite3 C API, see raw_inbox.h).
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

#include "core/message.h"
#include "sqlite/connection.h"
#include "sqlite/database.h"

struct sqlite3;

namespace dedupsim {

enum class BenchStrategy { kRaw, kNaive, kCheckThenProcess, kInbox, kNaturalKey };

std::string_view ToString(BenchStrategy strategy);  // "raw", "naive", "check-then-process", ...
std::optional<BenchStrategy> ParseBenchStrategy(std::string_view name);
// Every strategy in the order the bench reports them: the baseline first.
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

// Opens a connection to db and returns the strategy's consumer on it.
std::unique_ptr<StrategyHandler> MakeHandler(BenchStrategy strategy, const DatabaseFile& db);

}  // namespace dedupsim
