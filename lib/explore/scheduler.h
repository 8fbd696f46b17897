// Runs a plan once, under one interleaving, on a real SQLite file (or a PostgreSQL schema:
// store/explore_database.h, which names the backend so this does not). Each consumer
// instance is a fiber (a stack of its own on the caller's thread, baton.h) with its own
// session; the session's ExploreGate parks the instance before every statement, hook and
// email send, and whenever the database is locked. Exactly one instance runs at a time: the
// scheduler hands a baton to the instance a Chooser picks, and waits until that instance
// parks again. The same choices on the same plan
// always give the same run.
//
// An instance that finds the database locked is blocked: it is not offered again until
// another instance has taken a step. When every live instance is blocked, the run is a
// deadlock. A crash point kills the instance as it reaches that step: the gate throws
// SimulatedCrash, the instance closes its connection without committing (what a process
// death leaves), and the broker redelivers the message to the restarted instance.
//
// A Scheduler is not thread-safe: one caller, on one thread for the Scheduler's life, runs
// one plan at a time. It owns a temporary
// database that every run empties and restocks (DELETE, not a new file), and keeps each
// instance's connection, with its prepared statements, from run to run unless it crashed.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "explore/footprint.h"
#include "explore/outcome.h"
#include "explore/plan.h"
#include "store/database_settings.h"
#include "store/explore_database.h"
#include "store/tables_reader.h"
#include "trace/trace.h"

namespace dedupsim::explore {

// Decides who moves next.
class Chooser {
 public:
  virtual ~Chooser() = default;
  // eligible: bit i set when instance i may take a step; depth: steps taken so far.
  // Returns the instance to move, or nullopt to abandon the run.
  virtual std::optional<int> Choose(size_t depth, uint32_t eligible) = 0;
  // Called after the step at depth was taken by instance, with what it touched.
  virtual void Took(size_t /*depth*/, int /*instance*/, const Footprint& /*footprint*/) {}
};

// What the database and the provider hold after a run.
struct Figures {
  int64_t reserved = 0;           // Reserved, summed over the orders' books
  int64_t reserved_expected = 0;  // the quantities, once each, when a subscriber reserves
  int64_t inbox_rows = 0;
  int64_t emails_sent = 0;
  int64_t flagged = 0;     // deliveries that returned NeedsReconciliation
  int64_t crashes = 0;     // instances that died at a crash point
  int64_t deliveries = 0;  // delivery attempts, redeliveries included
};

// How one delivery attempt ended (see deliveries.h).
enum class DeliveryEnd {
  kAcked,      // the consumer returned Processed and acked
  kSkipped,    // returned Skipped: a duplicate, acked without the work
  kReconcile,  // returned NeedsReconciliation: acked, flagged for a person
  kCrashed,    // the process died at a step; not acked, so the broker redelivers
  kRefused,    // the database refused it (an error): not acked, redelivered or given up
  kStopped,    // the run ended first (a deadlock was broken by stopping every instance)
};

struct DeliveryAttempt {
  std::string instance;          // "A"
  std::string subscriber;        // the consumer (strategy) it was handed to
  std::string message;           // the MessageId
  int copy = 0;                  // which copy of the message (1, 2, ...), in the broker's order
  int copies = 0;                // how many copies of the message the plan has
  int attempt = 0;               // the broker's number for this delivery of the copy (1 = first)
  std::vector<size_t> steps;     // its steps' numbers in the schedule (1-based)
  std::vector<std::string> did;  // what each step did: "SELECT Inbox: no row"
  std::vector<std::string> committed;  // writes whose commit it saw: "UPDATE StockItems"
  std::vector<std::string> undone;     // writes rolled back (by ROLLBACK, or by its death)
  DeliveryEnd end = DeliveryEnd::kStopped;
  std::string ended;  // the end in words: "crashed at AfterStockCommitted (not acked)"
  bool ack_lost = false;
};

struct ScheduleResult {
  std::vector<int> picks;             // who moved at each step
  std::vector<uint32_t> eligible;     // who could have, at each step
  std::vector<std::string> steps;     // "A  INSERT Inbox", "B  retry INSERT Inbox", ...
  std::vector<Footprint> footprints;  // what each step touched
  // The delivery attempt each step belonged to: 1 for the run's first attempt (the first
  // "deliver" event of its trace), 2 for the next one started, and so on.
  std::vector<int64_t> attempts;
  Outcome outcome = Outcome::kOnce;
  Figures figures;
  std::string note;        // why a deadlock or error outcome, else ""
  bool abandoned = false;  // the chooser gave up: no outcome
  // The scheduler's deadline passed (Scheduler::StopAt): the run was stopped between steps.
  // Abandoned too: no outcome.
  bool out_of_time = false;
  // The schedule as delivery attempts, read from the trace of a replay (DeliveriesOf);
  // empty for a run without a recorder.
  std::vector<DeliveryAttempt> deliveries;
  // SQLite only: deliveries refused because a transaction that had read could not write
  // (SQLITE_BUSY: another instance held the write lock, or had committed since the read;
  // 5 or 517) and were left to the broker's redelivery. PostgreSQL refuses no such write:
  // under READ COMMITTED the write waits for the other's commit, then runs.
  int stale_refusals = 0;
};

// When an instance that found the database locked is offered again.
enum class RetryRule {
  // After any other instance has taken a step. A retry that finds the lock still held is
  // a step of its own, so schedules differing only in such futile retries are counted.
  kAfterAnyStep,
  // After another instance has taken a step on the file it waits for: only such a step
  // can release the lock (a commit, a rollback, an autocommit write, the end of a read, a
  // crash). Every schedule of kAfterAnyStep, with its futile retries left out, is one of
  // these, with the same final state; a step that finds a file locked then only depends
  // on steps on that file.
  kAfterStepOnItsFile,
  // After another instance's step that released a write lock on the file it waits for:
  // a COMMIT or ROLLBACK, an autocommit write's end, a crash or close, by the connection
  // that held the lock across a scheduling point (only one instance runs at a time, so a
  // lock that blocked another was held while its holder was parked). Every schedule of
  // kAfterStepOnItsFile, with its futile retries left out (those after a step on the file
  // that released nothing), is one of these, with the same final state. When no instance
  // could move under this rule but one could under kAfterStepOnItsFile (a lock that ended
  // in a way not seen as a release), that rule decides, so a deadlock is what it was. The
  // reduced search with the WAL journal uses this rule.
  kAfterRelease,
};

struct SchedulerOptions {
  JournalMode journal = JournalMode::kWal;
  // Off: no fsync. Only a power loss or an OS crash could tell the difference, and none is
  // simulated: a crash here is a process death, after which SQLite's own files decide.
  Synchronous synchronous = Synchronous::kOff;
  // Keep each instance's connection (and its prepared statements) from run to run. A
  // crashed instance always reopens.
  bool reuse_connections = true;
  size_t max_steps = 5000;  // a run longer than this ends as an error
  int max_attempts = 5;     // deliveries of one message refused by the database, then given up
  RetryRule retry = RetryRule::kAfterAnyStep;
  // Run on this PostgreSQL schema instead of a temporary SQLite file (null: SQLite). Only
  // strategies that RunsOnPostgres() run there. A statement the side connection shows waiting
  // for a lock (pg_blocking_pids non-empty) is a blocked step: the instance is offered
  // again once its statement has its answer, which it gets when the blocker commits or
  // rolls back (the retry rule is SQLite's). The schema must outlive the scheduler.
  const ExploreServer* postgres = nullptr;
  Isolation isolation = Isolation::kReadCommitted;  // PostgreSQL's; SQLite ignores it
};

class Scheduler {
 public:
  // strategies: every strategy any plan will use (their schemas are created once).
  Scheduler(std::span<const Strategy* const> strategies, SchedulerOptions options = {});
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Runs plan from a freshly reset database. With a recorder, every step of every
  // instance is traced into it. Throws std::logic_error when a consumer failed in a way
  // the explorer does not model (a bug), DatabaseError when the database is unusable.
  ScheduleResult Run(const Plan& plan, Chooser& chooser, Recorder* recorder = nullptr);

  // From now on, a run still going at `deadline` is stopped between steps (a consumer
  // file's statement is held to the sandbox's own budget, sqlite/sandbox.h). The run is
  // abandoned with out_of_time. nullopt: no deadline.
  void StopAt(std::optional<std::chrono::steady_clock::time_point> deadline);

  // A reader of every table of the explorer's database as a run left it or leaves it
  // (store/tables_reader.h): on SQLite its file and the second file (a cache strategy's,
  // when a strategy has one and second_file is true), each through a read-only connection;
  // on PostgreSQL the schema's tables, committed rows only. The scheduler must outlive the
  // reader.
  std::unique_ptr<TablesReader> OpenTablesReader(bool second_file = true) const;
  JournalMode journal() const;

  struct Impl;

 private:
  ScheduleResult RunUnguarded(const Plan& plan, Chooser& chooser, Recorder* recorder);

  std::unique_ptr<Impl> impl_;
};

}  // namespace dedupsim::explore
