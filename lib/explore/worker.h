// One consumer instance of the explorer's scheduler: a fiber (baton.h), its session (its
// connections: SQLite's files, or one PostgreSQL connection; store/explore_database.h), and
// the gate they call before every statement, hook and email send. At each step the worker parks and hands the baton back (baton.h); the
// scheduler decides who moves next. It takes the step only when given the baton again, or
// dies there (SimulatedCrash) when the step is its attempt's crash point; a statement that
// finds the database locked parks it as blocked. What each step touched (its Footprint) is
// read by the scheduler once the step is over.
//
// Thread-safety: a Worker's state is read and written only by whoever holds the baton: its
// own fiber while it runs, the scheduler while it is parked (both on one thread). Its owner (the scheduler's
// Impl) outlives it; it keeps its connections from run to run unless it crashed or the
// scheduler was told not to (SchedulerOptions::reuse_connections).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "explore/footprint.h"
#include "explore/plan.h"
#include "explore/scheduler.h"
#include "store/explore_database.h"
#include "trace/trace.h"
#include "world/email_provider.h"

namespace dedupsim::explore {

enum class WorkerState {
  kIdle,     // no script in this run
  kWaiting,  // has a script, not started (it may start after another instance ends)
  kAtGate,   // parked before a step, which it may take when picked
  kBlocked,  // parked after finding the database locked (or a redelivery awaiting a release)
  kRunning,  // holds the baton
  kDone,     // its script is over
};

class Worker final : public ExploreGate {
 public:
  Worker(Scheduler::Impl& owner, int index)
      : owner_(owner), index_(index), name_(InstanceName(index)) {}

  // Scheduler side, while the worker waits for the baton.
  void Assign(const InstanceScript* script, Recorder* recorder);
  void Quit() { quit_ = true; }

  WorkerState state() const { return state_; }
  const std::string& pending() const { return pending_; }
  const std::string& name() const { return name_; }
  bool crashed_last_step() const { return crashed_now_; }
  // Blocked as a redelivery that waits for a lock to be released (not a statement's retry).
  bool redelivery_wait() const { return redelivery_wait_; }
  // The run's delivery attempt (1 for its first) the step it waits to take belongs to.
  int64_t attempt_seq() const { return attempt_seq_; }
  // The files on which one of its connections holds the write lock (SQLite; 0 on PostgreSQL).
  // Read by the scheduler while the worker is parked.
  uint8_t WriteLocks() const;

  void clear_crashed() { crashed_now_ = false; }
  // Another instance's connection holds the write lock on file (read while they are parked).
  bool AnotherHoldsWriteLock(uint8_t file) const;
  int64_t blocked_at() const { return blocked_at_; }
  uint8_t blocked_file() const { return blocked_file_; }
  void set_blocked_at(int64_t progress) { blocked_at_ = progress; }
  // Steps on its file when it found the file locked (kAfterRelease's fallback).
  int64_t touched_at() const { return touched_at_; }
  void set_touched_at(int64_t touched) { touched_at_ = touched; }
  void MarkDone() { state_ = WorkerState::kDone; }
  bool released() const { return released_; }
  void set_settling(bool on) { settling_ = on; }
  const Footprint& footprint() const { return footprint_; }

  void Main();

  // ExploreGate: every statement and hook is a step the scheduler hands out.
  void BeforeStatement(uint8_t file, std::string_view sql, bool in_transaction) override;
  // RunHook notes a crash at a hook itself.
  void BeforeHook(std::string_view name) override;
  // SQLite: the statement found file locked.
  bool OnBusy(uint8_t file) override;
  // PostgreSQL: the server shows the statement waiting for a lock another backend holds.
  // It stays blocked (its statement still in the server) until Settle finds it has its
  // answer. (The connection notes the wait on the trace, with the server's words.)
  bool Blocked() override;
  // PostgreSQL: the statement has its answer after a wait; the step is taken when the
  // scheduler picks this instance again.
  void Released() override;

  // Parks until the scheduler picks this instance to take the step `label`, then lets it
  // run, or dies there when it is this attempt's crash point. Called by the gate methods
  // above, and directly for a step that is neither a statement nor a hook (an email send).
  void Arrive(const std::string& label, bool note_crash);

 private:
  // Sends go through the gate: the instance may crash just before the provider accepts.
  class GatedProvider;

  // Stamped with the delivery attempt it belongs to (the message and the broker's number
  // of this delivery), as the connections stamp their statements.
  void Note(const std::string& kind, const std::string& detail, const std::string& result);
  // Records the broker's release of the attempt's message after a crash: no ack came.
  void NoteUnacked(const DeliveryRef& released);

  void EnsureOpen(const Strategy& subscriber);

  uint16_t OpenFiles() const;

  void CloseAll();

  // The run is abandoned (no verdict; the next one starts from a reset): the session
  // unwinds (ExploreSession::Unwind: PostgreSQL keeps its connection, rolled back).
  void Unwind();

  static std::string Short(const std::string& id) { return id.substr(0, 8); }

  void RunScript();

  // One delivery attempt. Sets done_ when the message needs no more deliveries; returns
  // false when the run is being aborted.
  bool Attempt(const Delivery& d, int attempt);

  // The database refused the delivery, or the consumer gave up on it: not acked, and the
  // broker redelivers it, up to max_attempts.
  bool Refused(const Delivery& d, const std::exception& e, int attempt);

  Scheduler::Impl& owner_;
  const int index_;
  const std::string name_;
  const InstanceScript* script_ = nullptr;
  Recorder* recorder_ = nullptr;
  DeliveryRef delivery_;     // the attempt under way: message and the broker's number
  int64_t attempt_seq_ = 0;  // the run's count of attempts when it started
  std::unique_ptr<ExploreSession> session_;  // made at its first delivery
  WorkerState state_ = WorkerState::kIdle;
  std::string pending_;       // the step it waits to take
  std::string current_;       // the step it is taking
  std::string crash_at_;      // where this attempt dies, or ""
  int crash_step_ = 0;        // before which of its steps this attempt dies (1-based), or 0
  bool awaits_release_ = false;  // its next attempt waits for a lock to be released
  bool redelivery_wait_ = false;  // blocked, as the redelivery that awaits a release
  uint8_t last_file_ = kMainFile;  // the file of its last statement
  int steps_in_attempt_ = 0;  // steps this attempt has arrived at so far
  const Strategy* subscriber_ = nullptr;  // the consumer of the delivery under way
  ManualClock clock_{TimePoint{}};  // this attempt's :Now
  Footprint next_footprint_;  // what the step it waits to take will touch
  Footprint footprint_;       // what the step it is taking touched so far
  Footprint statement_footprint_;  // what its current statement touches when it runs
  bool dead_ = false;         // crashed: unwinding, nothing more runs
  bool crashed_now_ = false;
  bool done_ = false;
  bool quit_ = false;
  int64_t blocked_at_ = 0;    // progress count when it found the database locked
  int64_t touched_at_ = 0;    // steps on its file then
  uint8_t blocked_file_ = 0;  // the file it found locked
  bool released_ = false;     // PostgreSQL: its waiting statement has its answer
  bool settling_ = false;
};

}  // namespace dedupsim::explore
