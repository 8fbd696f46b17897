// A private, throwaway PostgreSQL cluster for one dedupsim command: a data folder in a new
// temporary folder, copied from the template in the user's cache (cluster_template.h) or,
// when there is none, made by initdb --no-sync (and then kept as the template), then the server (postgres itself, as our child process) with a
// Unix socket in that folder, no TCP listener (listen_addresses=''), and fsync=off, which
// is safe only because everything is removed at the end. As root, initdb and the server run
// as an unprivileged user (`postgres` when it exists, else `nobody`), since PostgreSQL
// refuses to run as root; the folder is given to that user.
//
// The server is stopped (fast shutdown) and the folder removed when the object is
// destroyed, also on errors. initdb and the server stay in dedupsim's process group, so a
// signal to the run's group reaches them too. On SIGINT or SIGTERM (cli/interrupt.h) the
// interrupt thread kills and reaps initdb if it still runs (it is forked as a registered
// child, under the registry's lock), then stops and reaps the server (its pid is recorded
// for the cleanup as it is forked) and removes the folder. Both are started with
// PR_SET_PDEATHSIG, so they end if dedupsim itself is killed; only the folder is then left
// in the temporary directory.
#pragma once

#include <sys/types.h>

#include <string>

namespace dedupsim {

class ThrowawayCluster {
 public:
  // Starts the cluster; throws DatabaseError (naming the server's bin folder or its log)
  // when PostgreSQL's server programs are missing or the server does not come up.
  static ThrowawayCluster Start();
  ~ThrowawayCluster();
  ThrowawayCluster(ThrowawayCluster&& other) noexcept;
  ThrowawayCluster& operator=(ThrowawayCluster&&) = delete;
  ThrowawayCluster(const ThrowawayCluster&) = delete;
  ThrowawayCluster& operator=(const ThrowawayCluster&) = delete;

  // "host=<socket folder> port=<port> dbname=postgres user=<user>".
  std::string conninfo() const;
  const std::string& folder() const { return folder_; }
  pid_t server_pid() const { return server_; }

  // Stops the server and removes the folder now; safe to call twice.
  void Stop() noexcept;

 private:
  ThrowawayCluster() = default;
  std::string folder_;
  std::string user_;
  pid_t server_ = -1;
  int port_ = 5432;
};

// The folder holding initdb and postgres: $DEDUPSIM_PG_BINDIR when set, else the highest
// version under /usr/lib/postgresql/*/bin (Debian's layout). Throws DatabaseError when
// none has both programs.
std::string FindServerBinDir();

}  // namespace dedupsim
