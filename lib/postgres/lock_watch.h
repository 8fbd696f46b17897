// The lock watch: a side connection that looks at one session's backend from outside
// while that session's statement runs, and says whether the backend waits for a lock and
// on whom, in the server's own words (pg_stat_activity's wait_event, pg_blocking_pids, the
// tuple lock's relation), never guessed from a timer or from SQL text. PgConnection opens
// one on WatchWaits and sends it a look a millisecond after the last one answered, while
// its statement runs; it also tells
// when a closed session's backend has exited (CloseAndAwaitExit), so its locks are gone.
//
// A PgLockWatch owns its side connection (closed by the destructor, which never throws)
// and is used by the thread that uses the connection it watches. It neither moves nor
// copies: its owner holds it by pointer. Never carry one across fork().
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "store/store.h"

struct pg_conn;

namespace dedupsim {

class PgLockWatch {
 public:
  // Opens the side connection with a libpq conninfo string; throws DatabaseError when the
  // server cannot be reached.
  explicit PgLockWatch(const std::string& conninfo);
  ~PgLockWatch();
  PgLockWatch(const PgLockWatch&) = delete;
  PgLockWatch& operator=(const PgLockWatch&) = delete;

  // A look is asynchronous, so that watching never delays the watched session: the owner
  // sends it (Send), polls socket() beside the watched connection's own socket, and reads
  // the answer when it has come (Receive); the watched session's answer is read the moment
  // it arrives, whatever the look is doing.
  //
  // The look asks: does backend `pid` wait for a lock (wait_event_type Lock) that another
  // client backend holds? Only client backends count as holders: an autovacuum worker
  // truncating one of our tables takes a brief exclusive lock and gives it up when someone
  // waits, no consumer's lock.
  //
  // Sends a look at backend pid. Only when !busy(). False when it could not be sent (a
  // broken side connection sees no wait).
  bool Send(int pid);
  // True from Send until its answer has been read (or dropped after Abandon).
  bool busy() const { return in_flight_; }
  // The side connection's socket, to poll for the look's answer.
  int socket() const;
  // Reads what has arrived of the look's answer. nullopt while it is incomplete, and when
  // the look was abandoned (its answer is then dropped, and busy() turns false). Otherwise
  // the look's verdict: when backend pid waits, marks wait as waited and fills its
  // wait_event, its lock_mode, (on the look that first sees it waiting, from PostgreSQL 14)
  // its waited_when_seen, its blocking_pids (the holders now) and waited_on: "row
  // <Table>" when the backend holds or waits for a tuple lock of that table, else (kept
  // from an earlier look, or) "key <target>"; returns true. Otherwise leaves wait as it was
  // and returns false, also when the look itself failed.
  std::optional<bool> Receive(WatchedStatement& wait, std::string_view target);
  // The look in flight is no longer wanted (the watched statement has its answer): its
  // answer is dropped when it comes, by Receive or before the next Send.
  void Abandon() { abandoned_ = in_flight_; }

  // Returns once backend `pid` is gone from pg_stat_activity (its transaction rolled back,
  // its locks released), or the side connection broke. One round trip per look, a
  // millisecond apart. Call after closing that backend's connection.
  void AwaitExit(int pid);

 private:
  void Drain();  // waits for and drops the look in flight, if any

  pg_conn* side_;
  std::string look_;  // the look's text for this server's version
  bool prepared_ = false;  // the look is prepared on side_ (as "dedupsim_look")
  bool in_flight_ = false;
  bool abandoned_ = false;
};

// True for an error that ends a lock wait without the lock being freed: lock_timeout
// (55P03), a cancel (57014), or the server's pick of the statement as a deadlock's victim
// (40P01). A statement that waited and failed with one of these did not go on.
bool GaveUpWaiting(std::string_view sqlstate);

}  // namespace dedupsim
