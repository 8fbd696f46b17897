// The lock watch: a side connection that looks at one session's backend from outside
// while that session's statement runs, and says whether the backend waits for a lock and
// on whom, in the server's own words (pg_stat_activity's wait_event, pg_blocking_pids, the
// tuple lock's relation), never guessed from a timer or from SQL text. PgConnection opens
// one on WatchWaits and asks it at each quiet millisecond of a statement; it also tells
// when a closed session's backend has exited (CloseAndAwaitExit), so its locks are gone.
//
// A PgLockWatch owns its side connection (closed by the destructor, which never throws)
// and is used by the thread that uses the connection it watches. It neither moves nor
// copies: its owner holds it by pointer. Never carry one across fork().
#pragma once

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

  // One look: does backend `pid` wait for a lock (wait_event_type Lock) that another client
  // backend holds? Only client backends count as holders: an autovacuum worker truncating
  // one of our tables takes a brief exclusive lock and gives it up when someone waits, no
  // consumer's lock. When it waits, marks wait as waited and fills its wait_event, its
  // blocking_pids (the holders now) and waited_on: "row <Table>" when the backend holds or
  // waits for a tuple lock of that table, else (kept from an earlier look, or) "key
  // <target>"; returns true. Otherwise leaves wait as it was and returns false, also when
  // the look itself failed (a broken side connection sees no wait).
  bool Look(int pid, WatchedStatement& wait, std::string_view target);

  // Returns once backend `pid` is gone from pg_stat_activity (its transaction rolled back,
  // its locks released), or the side connection broke. One round trip per look, a
  // millisecond apart. Call after closing that backend's connection.
  void AwaitExit(int pid);

 private:
  pg_conn* side_;
};

// True for an error that ends a lock wait without the lock being freed: lock_timeout
// (55P03), a cancel (57014), or the server's pick of the statement as a deadlock's victim
// (40P01). A statement that waited and failed with one of these did not go on.
bool GaveUpWaiting(std::string_view sqlstate);

}  // namespace dedupsim
