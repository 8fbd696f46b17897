// A connection dedupsim keeps open, idle, on a temporary file of its own (a run's database,
// a side store). While one is open, every other connection to the file finds the log's
// index in memory when it opens, instead of rebuilding it from the log, and the -shm file
// is not truncated and refilled each time the last lesson connection closes.
//
// Every live one is listed, and a pthread_atfork handler closes them all in the parent just
// before any fork(): SQLite's locks and its in-process record of them must never be carried
// into a child. Once closed by a fork, a kept connection stays closed until WithReopened
// opens it again; a dead child's log is therefore recovered by the next connection the
// lesson opens, as it would be without one.
#pragma once

#include <functional>
#include <mutex>
#include <optional>

#include "sqlite/connection.h"

namespace dedupsim {

class KeptConnection {
 public:
  explicit KeptConnection(Connection connection);
  ~KeptConnection();
  KeptConnection(const KeptConnection&) = delete;
  KeptConnection& operator=(const KeptConnection&) = delete;

  // Runs f on the connection, first opening it again with reopen if a fork closed it.
  void WithReopened(const std::function<Connection()>& reopen,
                    const std::function<void(Connection&)>& f);
  // Runs f on the connection and returns true, or returns false (f not run) if a fork
  // closed it.
  bool WithIfOpen(const std::function<void(Connection&)>& f);

 private:
  static void CloseAllBeforeFork();

  std::mutex mutex_;
  std::optional<Connection> connection_;  // guarded by mutex_
};

}  // namespace dedupsim
