// What a session measured of its own waits for locks, where the database makes a writer
// wait in the client: SQLite, one writer per file, whose busy handler retries a statement
// while another connection holds the write lock. Session::lock_waits() hands it out, or
// null where the database keeps no such record: PostgreSQL's statements wait in the server,
// and a session's waits there are what the server showed (Session::WatchedStatements,
// SetWaitListener). A caller that reads these figures handles the null: it never stands in
// a zero for a figure nobody measured.
//
// The times are on the steady clock (CLOCK_MONOTONIC), shared by threads and by processes
// forked from one another, so two instances' histories can be laid side by side. Used by
// the session's thread only, like the session.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

namespace dedupsim {

using SteadyTime = std::chrono::steady_clock::time_point;

// What a busy handler saw since the connection opened.
struct BusyStats {
  int64_t calls = 0;
  std::chrono::microseconds waited{0};
};

// The figures of `after` less those of `before`: what was seen in between.
inline BusyStats Since(const BusyStats& before, const BusyStats& after) {
  return BusyStats{after.calls - before.calls, after.waited - before.waited};
}

// One stretch of the session's transaction holding the write lock. The lock was taken
// during the statement that ran from acquire_started to acquired, and was free again
// somewhere between release_started and released (the COMMIT or ROLLBACK step, or the
// close that dropped the transaction).
struct LockHold {
  SteadyTime acquire_started;
  SteadyTime acquired;
  SteadyTime release_started;
  SteadyTime released;
};

// One stretch of a statement blocked on a lock: from the busy handler's first call to the
// statement's return.
struct BlockedWait {
  SteadyTime blocked;
  SteadyTime resumed;
};

// What a session kept of its locks (LockWaits::KeepLockHistory).
struct LockHistory {
  std::vector<LockHold> held;
  std::vector<BlockedWait> waits;
};

// True when some wait of `waiter` was blocked while `holder` held the write lock and went
// on only after that hold ended: the wait overlaps the hold, and it resumed no earlier than
// the step that released the lock began. A busy call that overlaps no hold of the holder
// (WAL-index or checkpoint contention, another writer) does not count.
bool WaitedFor(const LockHistory& waiter, const LockHistory& holder);

class LockWaits {
 public:
  virtual ~LockWaits() = default;
  // The busy handler's calls and time since the session opened.
  virtual BusyStats busy() const = 0;
  // Keeps every write-lock hold and every blocked wait from now on (off by default: the
  // bench and the soak run millions of transactions).
  virtual void KeepLockHistory() = 0;
  // What was kept so far. A hold still open ends at the session's Close.
  virtual LockHistory lock_history() const = 0;
  // While other_holds() returns true (asked at each busy-handler call), a wait does not use
  // up the busy timeout: the timeout runs from the first call at which it returns false.
  // For a wait whose end is known by an event (lesson/instances.h: the first instance's
  // transaction), so that neither a hold nor the scheduler decides whether the waiter gives
  // up. wake_fd >= 0: a descriptor that turns readable (data or EOF) at that event; the
  // pause between two tries of the lock ends as soon as it does.
  virtual void KeepWaitingWhile(std::function<bool()> other_holds, int wake_fd) = 0;
  // Ends the session's connection now, committing nothing (an open transaction is
  // discarded, as when the process dies), so the history holds the end of a hold that was
  // still open. Later statements on the session throw.
  virtual void Close() noexcept = 0;
};

}  // namespace dedupsim
