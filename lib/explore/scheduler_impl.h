// The scheduler's private parts (scheduler.h), shared by the three files that make it:
// scheduler.cpp runs a plan (the loop that hands out steps, the reset between runs),
// worker.cpp is one consumer instance (its thread, its connections, the gate they call),
// measurement.cpp reads what a run left (the figures and each strategy's effect). Not for
// use outside lib/explore/.
//
// Threads: the scheduler's thread and its workers' take turns holding the baton
// (baton.h); every member of Impl below "Per run" is touched only by the baton's holder.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "explore/baton.h"
#include "explore/scheduler.h"
#include "postgres/connection.h"
#include "sqlite/connection.h"
#include "sqlite/database.h"

namespace dedupsim::explore {

enum class WorkerState { kIdle, kWaiting, kAtGate, kBlocked, kRunning, kDone };

// What the deliveries of one (order, subscriber) pair came to.
struct Tally {
  bool acked = false;
  bool flagged = false;
};

// The clock every run starts from: the same timestamps in every schedule.
inline const TimePoint kEpoch =
    std::chrono::sys_days{std::chrono::year{2026} / 1 / 5} + std::chrono::hours{9};

class Worker;

struct Scheduler::Impl {
  Impl(std::span<const Strategy* const> strategies, SchedulerOptions options);
  ~Impl();

  void Reset(const Plan& plan);
  void ResetPostgres(const Plan& plan);
  // Lets every PostgreSQL instance whose statement waits in the server look again, until
  // each is either still waiting or has its answer (the blocker committed or rolled back).
  void Settle(int except);
  void Abort();
  struct ResetSql;
  const ResetSql& ResetOf(const Strategy* s);
  Figures Measure(const Plan& plan, ScheduleResult& result);
  void RecordResult(const Delivery& delivery, DeliveryResult r);
  size_t TallySlot(const Delivery& delivery) const;

  SchedulerOptions options;
  std::vector<const Strategy*> strategies;
  DatabaseFile db;
  std::optional<DatabaseFile> aux_db;
  Connection control;  // set-up and read-back; never scheduled
  std::optional<PgConnection> pg_control;  // the same on PostgreSQL
  std::optional<Connection> aux_control;
  ManualClock clock{kEpoch};
  Baton baton{kMaxInstances};
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<std::thread> threads;
  int cpu = -1;  // where every thread runs while a plan runs; -1: anywhere

  // Each strategy's reset scripts, split into statements prepared once on the controls.
  struct ResetSql {
    std::vector<std::string> main;
    std::vector<std::string> aux;
  };
  std::unordered_map<const Strategy*, ResetSql> reset_sql;

  // Per run; touched only by the baton holder.
  const Plan* plan = nullptr;
  bool abort = false;
  std::vector<std::string> sent;  // idempotency keys (message ids) the provider accepted
  std::vector<std::string> published;  // message ids whose delivery published a message
  std::unordered_map<std::string, size_t> order_of_message;
  std::vector<Tally> tallies;  // orders x subscribers
  int64_t crashes = 0;
  int64_t attempts = 0;
  std::string failure;  // a consumer failed in a way the explorer does not model
};

}  // namespace dedupsim::explore
