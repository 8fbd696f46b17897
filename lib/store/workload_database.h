// What the bench and the soak ask of a database they run a workload on, whichever the
// backend, so neither names one: stock the workload's books and read back what was
// reserved (WorkloadDatabase), open measured connections to it (a MeasuredSession, the
// store a consumer of the registry runs on; a RawInbox, the inbox's SQL written by hand on
// the backend's C API, the baseline), and read what each connection counted of itself.
// Each backend implements them in its own folder (sqlite/workload_database.h,
// postgres/workload_database.h).
//
// Rules: a connection is opened in the thread or process that uses it (after any fork)
// and used from that thread only. The figures are the backend's own: SQLite's busy
// handler and its commit and rollback hooks, PostgreSQL's statements sent and what the
// server said of synchronous_commit; a figure a backend does not have is zero (or nullopt).
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/message.h"
#include "store/durable_queue.h"
#include "store/error.h"
#include "store/lock_waits.h"
#include "store/store.h"

namespace dedupsim {

// Transactions a connection ended, as the database reported them (SQLite's commit and
// rollback hooks) or as its store counted them (PostgreSQL): what the database did, not
// what the consumer meant to do.
struct TransactionCounts {
  int64_t commits = 0;
  int64_t rollbacks = 0;
};

// A connection's own figures.
class MeasuredConnection {
 public:
  virtual ~MeasuredConnection() = default;
  virtual BusyStats busy() const { return {}; }
  virtual TransactionCounts transactions() const = 0;
  // Called after a step that opened (true) or ended (false) a transaction, where the
  // backend reports it (SQLite's Connection, PostgreSQL's counting store); the raw
  // baselines do not report.
  virtual void OnTransactionChange(std::function<void(bool open)> callback) { (void)callback; }
  // Statements sent to the server so far (round trips); 0 where nobody counts (SQLite).
  virtual int64_t statements() const { return 0; }
  // synchronous_commit as the server said it for this connection; nullopt on SQLite.
  virtual std::optional<bool> synchronous_commit() const { return std::nullopt; }
};

// A connection of its own seen through the store seam: what a consumer of the registry
// runs on.
class MeasuredSession : public MeasuredConnection {
 public:
  virtual Store& store() = 0;
};

// The inbox consumer's SQL on the backend's C API, with nothing around it: it writes what
// IdempotentReserveStock writes (an Inbox row with ReceivedAt and CompletedAt, then
// Reserved += Quantity, in one transaction), so the gap between the two is what dedupsim's
// own layers cost.
class RawInbox : public MeasuredConnection {
 public:
  // True when the message was processed, false for a duplicate. Throws StoreError.
  virtual bool Handle(const OrderPlaced& m) = 0;
};

// The consumer's name the raw baselines write, as the inbox consumer does.
inline constexpr char kRawInboxConsumer[] = "inventory.reserve-stock";

// The timestamp's text, 2026-11-30T22:41:04.123Z, as FormatTimestamp writes it, for the raw
// baselines: remade once per second (gmtime_r), then only the milliseconds are written.
struct RawStamp {
  static constexpr int kLength = 24;
  const char* Now();  // valid until the next call
  time_t second = -1;
  char text[80] = {};  // room for any int snprintf might write; 24 used
};

// A database a workload runs on: a new SQLite file, or a PostgreSQL schema emptied first.
class WorkloadDatabase {
 public:
  virtual ~WorkloadDatabase() = default;
  // Stocks every book (a million on hand, nothing reserved, titled "Book 1", "Book 2", ...
  // in order) in one transaction; PostgreSQL empties Inbox, InboxByMessageId,
  // StockReservations and StockItems first (its schema is reused), SQLite's file is new.
  virtual void StockBooks(const std::vector<std::string>& books) const = 0;
  // Leaves nothing of the stocking for the timed run to pay: SQLite checkpoints its WAL
  // (TRUNCATE), so every strategy starts alike; nothing on PostgreSQL.
  virtual void Settle() const {}
  // Reserved of every StockItems row, by BookId.
  virtual std::unordered_map<std::string, int64_t> ReadReserved() const = 0;
  virtual std::unique_ptr<MeasuredSession> OpenSession() const = 0;
  virtual std::unique_ptr<RawInbox> OpenRawInbox() const = 0;

  // The soak's durable queue kept in this database (store/durable_queue.h): its table
  // created where missing and emptied, then every message enqueued in order, all visible
  // at once.
  virtual void FillQueue(const std::vector<OrderPlaced>& messages) const = 0;
  // One consumer's handle on the queue, on a connection of its own; count_open hears the
  // transactions that connection opens and ends (SQLite's; each of PostgreSQL's calls is
  // one statement in its own transaction, and it hears nothing).
  virtual std::unique_ptr<BrokerQueue> OpenQueue(
      std::chrono::milliseconds lease, int64_t consumer,
      const std::function<void(bool open)>& count_open) const = 0;
  virtual BrokerCounts ReadQueueCounts() const = 0;
  // The OrderIds no entry of which was acked (none when every entry was).
  virtual std::unordered_set<std::string> UnackedOrders() const = 0;

  // Called in a catch block with a database error of a run on this database: throws it
  // as the user should read it (SQLite names its file; PostgreSQL's name the server).
  [[noreturn]] virtual void Rethrow(const DatabaseError& e) const = 0;
};

}  // namespace dedupsim
