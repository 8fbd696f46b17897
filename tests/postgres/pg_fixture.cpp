// The CTest fixture of the `postgres` tests: one throwaway cluster (lib/postgres/cluster.h)
// shared by every test of the label, each test in its own schema.
//
//   pg_fixture start STATE_DIR   starts a keeper process that owns the cluster, writes the
//                                cluster's conninfo to STATE_DIR/conninfo and the keeper's
//                                pid to STATE_DIR/pid, and returns once the server answers.
//   pg_fixture stop STATE_DIR    asks the keeper to stop the cluster (SIGTERM), waits until
//                                the keeper is gone, removes the state files.
//
// The keeper (tests/keeper.h) detaches from CTest's output pipes and starts its own session;
// the server dies with the keeper (PR_SET_PDEATHSIG).
#include <cstdio>
#include <string>

#include "keeper.h"
#include "postgres/cluster.h"
#include "postgres/connection.h"
#include "postgres/store.h"

namespace {

const dedupsim::testing::KeeperNames kNames{"pg_fixture", "cluster", "conninfo", 30};

int Start(const std::string& dir) {
  return dedupsim::testing::StartKeeper(kNames, dir, [](const auto& hold) {
    dedupsim::ThrowawayCluster cluster = dedupsim::ThrowawayCluster::Start();
    // What `check --backend postgres --dsn` copies for each file on a server without
    // template0, made while nothing else is connected to the postgres database.
    dedupsim::PgConnection admin(cluster.conninfo());
    for (const char* sql : dedupsim::kPgCheckTemplateSql) admin.ExecScript(sql);
    hold(cluster.conninfo());
    cluster.Stop();
  });
}

int Stop(const std::string& dir) { return dedupsim::testing::StopKeeper(kNames, dir); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: pg_fixture start|stop STATE_DIR\n");
    return 2;
  }
  std::string verb = argv[1];
  if (verb == "start") return Start(argv[2]);
  if (verb == "stop") return Stop(argv[2]);
  std::fprintf(stderr, "usage: pg_fixture start|stop STATE_DIR\n");
  return 2;
}
