// dedupsim soak: K consumer processes compete for the deliveries of a durable broker
// (broker.h) while a supervisor kills random consumers with SIGKILL at random moments and
// starts new ones in their place. Unacked deliveries come back when their lease ends. At
// the end the database is asked whether every order's effect was applied exactly once and
// every entry acked.
//
// The supervisor holds no connection while consumers run: it sets the database up and
// closes it, forks, and opens a connection again only once every consumer is gone. Each
// consumer opens its own connections after fork. The kill schedule (when, and which
// consumer slot) comes from the seed; what the victim was doing at that instant is up to
// the scheduler, so counts vary between runs with the same seed.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/strategy.h"
#include "bench/workload.h"
#include "store/database_settings.h"
#include "store/databases.h"
#include "store/durable_queue.h"

namespace dedupsim {

struct SoakOptions {
  WorkloadSpec workload{5000, 0.3, 1};
  int consumers = 4;
  BenchStrategy strategy = *ParseBenchStrategy("inbox");  // any but raw
  std::chrono::milliseconds kill_every{50};  // mean gap between kills; 0: no kills
  std::chrono::milliseconds lease{200};      // visibility timeout of a delivery
  std::chrono::seconds timeout{300};         // give up (and fail) after this long
  DatabaseSettings settings;
  std::string db_path;  // empty: a temporary database, removed at the end
  // Where the soak's database is made (store/databases.h; the caller owns it): on
  // PostgreSQL the schema the soak runs in (its tables emptied first). Null: SQLite, the
  // db_path file or a temporary one. Each consumer process opens its own connections after
  // fork.
  const Databases* databases = nullptr;
  // NATS JetStream (--broker nats): the deliveries go through this server instead of the
  // database's broker table, in a stream of that name (created, marked, deleted at the end).
  std::string nats_url;
  std::string nats_stream = "dedupsim-soak";

  bool postgres() const { return databases != nullptr && databases->backend() == "postgres"; }
};

struct SoakReport {
  SoakOptions options;
  int64_t distinct_orders = 0;
  int64_t duplicates = 0;             // in the workload: entries that repeat an earlier MessageId
  int64_t kills = 0;                  // consumers the supervisor killed with SIGKILL
  int64_t kills_mid_transaction = 0;  // of those, killed with a transaction open (between
                                      // BEGIN's return and COMMIT's or ROLLBACK's return)
  int64_t restarts = 0;               // consumers started in place of one that died
  int64_t busy_errors = 0;          // consumers that died of an SQLITE_BUSY they could not wait out
  int64_t other_errors = 0;         // consumers that died of anything else unplanned
  std::vector<std::string> errors;  // the first few, one line each
  BrokerCounts broker;
  EffectCheck check;
  // NATS with entries left unacked: the server does not say which orders' copies were
  // acked, so check.lost counts every order never applied, lost or not reached.
  bool reach_unknown = false;
  bool interrupted = false;  // stopped by the caller (Ctrl-C)
  bool timed_out = false;
  // --role supervisor: the consumers were started separately (their number, strategy and
  // kills are not the supervisor's); consumers_seen is how many distinct consumers the
  // broker table says leased an entry.
  bool supervisor_only = false;
  int64_t consumers_seen = 0;  // -1: not known (NATS: one shared consumer)
  std::chrono::nanoseconds elapsed{0};

  // Every order applied once, every entry acked, no error, run to the end.
  bool held() const;
  // One line per invariant that failed.
  std::vector<std::string> failures() const;
};

// Told how the run is going, about ten times a second; nothing in the soak prints.
class SoakProgress {
 public:
  virtual ~SoakProgress() = default;
  virtual void Update(int64_t acked, int64_t total, int64_t kills,
                      std::chrono::nanoseconds elapsed) = 0;
  virtual void Finished() = 0;
};

// Throws std::invalid_argument naming the first option out of range (the number of
// messages or consumers, the duplicate rate, raw as a strategy, the kill gap, the lease,
// the timeout). RunSoak and the two roles below call it first.
void ValidateSoakOptions(const SoakOptions& options);

// Runs the soak. interrupted is polled every few milliseconds; once it returns true the
// consumers are stopped and what the database holds is reported. progress may be null.
// Throws std::invalid_argument for options out of range, DatabaseError when the database
// cannot be used (a foreign --db file is refused untouched).
SoakReport RunSoak(const SoakOptions& options, SoakProgress* progress,
                   const std::function<bool()>& interrupted);

// ---- Consumers on several machines (PostgreSQL: options.postgres must be set) ----------
// One server, one durable broker table, any number of consumer processes started
// separately (soak --role consumer), on this machine or others, and one supervisor.

// The supervisor: empties the run's tables, stocks the books, fills the broker, starts the
// run, then waits (reading the broker table) until every entry is acked, the timeout, or
// interrupted; ends the run, so the consumers stop, and reports what the server holds. It
// kills nobody: kills and restarts are 0 (kill consumers by hand: their leases come back).
SoakReport RunSoakSupervisor(const SoakOptions& options, SoakProgress* progress,
                             const std::function<bool()>& interrupted);

struct SoakConsumerReport {
  int64_t consumer = 0;  // its id on the broker's LeaseOwner column (random, not a pid)
  int64_t received = 0;
  int64_t processed = 0;
  int64_t skipped = 0;
  int64_t acks_refused = 0;  // its lease had gone to another consumer
  bool run_done = false;     // it saw the supervisor end the run
  bool interrupted = false;
  bool timed_out = false;
};

// A consumer: waits for a run to start, then receives, handles (options.strategy) and acks
// until the supervisor ends the run, options.timeout passes or interrupted says so. Throws
// DatabaseError (a StoreError) when the server fails it.
SoakConsumerReport RunSoakConsumer(const SoakOptions& options,
                                   const std::function<bool()>& interrupted);

}  // namespace dedupsim
