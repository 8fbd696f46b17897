// The inside of the explorer's Scheduler (scheduler.h), shared by its parts: the run loop
// and the resets (scheduler.cpp), the workers (worker.h), and the measurement and
// recording of what a run left (measure.cpp). Not a public interface: only those files
// include it.
//
// Thread-safety: everything here is touched only by the holder of the baton (baton.h):
// the scheduler between steps, one worker's fiber during its step, all on one thread.
#pragma once

#include <chrono>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "explore/baton.h"
#include "explore/scheduler.h"
#include "store/explore_database.h"

namespace dedupsim::explore {

class Worker;

// What the deliveries of one (order, subscriber) pair came to.
struct Tally {
  bool acked = false;
  bool flagged = false;
  bool given_up = false;  // a delivery of it was refused on the broker's last attempt
};

struct Scheduler::Impl {
  Impl(std::span<const Strategy* const> strategies, SchedulerOptions options);
  ~Impl();

  void Reset(const Plan& plan);
  // Lets every PostgreSQL instance whose statement waits in the server look again, until
  // each is either still waiting or has its answer (the blocker committed or rolled back).
  void Settle(int except);
  void Abort();
  Figures Measure(const Plan& plan, ScheduleResult& result);
  void RecordResult(const Delivery& delivery, DeliveryResult r);
  void RecordGivenUp(const Delivery& delivery);
  // A plan with one instance: what the books moved by during the attempt that just ended is
  // that delivery's (its order's, its subscriber's).
  void AfterAttempt(const Delivery& delivery);
  size_t TallySlot(const Delivery& delivery) const;

  SchedulerOptions options;
  // The tables, their resets and read-backs, and each instance's session: SQLite's
  // temporary files, or options.postgres's schema (store/explore_database.h).
  std::unique_ptr<ExploreDatabase> database;
  // PostgreSQL's way: a statement that meets a lock waits in the server (Blocked, Released,
  // Settle), and no write lock is seen; else SQLite's (OnBusy, the files' write locks).
  const bool waits_in_server;
  Baton baton{kMaxInstances};
  std::vector<std::unique_ptr<Worker>> workers;

  // Per run; touched only by the baton holder.
  const Plan* plan = nullptr;
  bool abort = false;
  std::optional<std::chrono::steady_clock::time_point> deadline;  // StopAt
  // What the deliveries sent: the message they handled, and the subscriber that did.
  struct Sent {
    std::string message_id;
    const Strategy* subscriber = nullptr;
  };
  std::vector<Sent> sent;       // emails the counting provider accepted
  std::vector<Sent> published;  // messages published to the broker
  std::unordered_map<std::string, size_t> order_of_message;
  std::vector<BookRow> books;  // the StockItems rows the plan started with
  // One instance only: Reserved as the last attempt left it, and per tally slot what each
  // book moved by during that slot's deliveries.
  std::map<std::string, int64_t> reserved_now;
  std::vector<std::map<std::string, int64_t>> moved;
  TimePoint start;             // the plan's start on the clock
  std::vector<Tally> tallies;  // orders x subscribers
  int64_t crashes = 0;
  int64_t attempts = 0;
  int stale_refusals = 0;  // ScheduleResult::stale_refusals of the run under way
  std::string failure;  // a consumer failed in a way the explorer does not model
  // ... because its input is at fault (a consumer file's statement past its budget) or the
  // machine is (a full disk: StoreErrorKind::kEnvironment): the error itself, rethrown as it
  // is, never reported as the explorer's own failure nor taken for a consumer's refusal.
  std::exception_ptr input_failure;

  [[noreturn]] void ThrowFailure() const {
    if (input_failure) std::rethrow_exception(input_failure);
    throw std::logic_error(failure);
  }
};

}  // namespace dedupsim::explore
