// A lesson's second party on a server database: a store's work (a claim, a whole
// delivery) run on a thread of its own, so the lesson can act while that work waits inside
// the server for a lock someone else holds (kill the holder, stop it, let a timeout fire)
// and then read, from the server's own account (Session::WatchedStatements), whether it
// waited, on what, for whom, and when its answer came.
//
// AwaitBlocked returns once the store's own watch has seen its statement blocked, told
// through Store::SetWaitListener (PostgreSQL's side connection: wait_event Lock and
// pg_blocking_pids); never a timer: the lesson acts only once the wait is real and
// recorded. Any backend's store runs the work, but only a server's watches its statements
// (on SQLite statements() stays empty). A LockWaiter is used by the thread that made it;
// the destructor joins the thread (the work must end: it ends when the lock is freed or a
// timeout fires).
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "store/store.h"

namespace dedupsim {

class Recorder;

class LockWaiter {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;

  // Opens a store of backend traced under instance as actor (kActorConsumer, kActorProbe),
  // marks it as working on delivery, and runs work(store) on a new thread.
  LockWaiter(const Backend& backend, Recorder* recorder, std::string instance, std::string actor,
             DeliveryRef delivery, std::function<void(Store&)> work);
  ~LockWaiter();
  LockWaiter(const LockWaiter&) = delete;
  LockWaiter& operator=(const LockWaiter&) = delete;

  // Waits until the waiter's statement has been seen blocked by another backend, or the
  // work has ended, or timeout passed. True when it was seen blocked.
  bool AwaitBlocked(std::chrono::milliseconds timeout);
  // Waits for the work to end; rethrows what it threw.
  void Join();

  // After Join: every statement as the server saw it, the first one that waited (or null),
  // and when that one got its answer.
  const std::vector<WatchedStatement>& statements() const { return statements_; }
  const WatchedStatement* FirstWait() const;
  // Throws nothing: what work threw, kept (Join rethrows it).
  std::exception_ptr error() const { return error_; }

 private:
  void Body(const Backend& backend, Recorder* recorder, const std::string& instance,
            const std::string& actor, DeliveryRef delivery,
            const std::function<void(Store&)>& work);

  std::mutex mu_;
  bool blocked_ = false;
  std::condition_variable changed_;
  bool done_ = false;
  std::vector<WatchedStatement> statements_;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace dedupsim
