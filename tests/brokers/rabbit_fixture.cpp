// The CTest fixture of the `rabbitmq` tests: one private RabbitMQ node
// (lib/broker/rabbitmq_node.h) shared by every test of the label, as the `postgres` tests
// share a cluster: a node takes 12 to 17 s to start, a test then seconds.
//
//   rabbit_fixture start STATE_DIR TESTS_TMP  starts a keeper process that owns the node,
//       writes its AMQP url to STATE_DIR/url and the keeper's pid to STATE_DIR/pid, and
//       returns once the node answers; TESTS_TMP (the tests' TMPDIR) is made anew, empty.
//   rabbit_fixture stop STATE_DIR TESTS_TMP   asks the keeper to stop the node (SIGTERM),
//       waits until the keeper is gone, removes the state files; then fails if the tests
//       left anything in TESTS_TMP (a run or a test that did not clean up after itself).
//
// The keeper (tests/keeper.h) detaches from CTest's output pipes and starts its own session;
// the node and its epmd die with the keeper (PR_SET_PDEATHSIG). The node's
// folder is in STATE_DIR (TMPDIR), never in the tests' own temporary folder.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "keeper.h"
#include "world/broker/rabbitmq_node.h"

namespace {

const dedupsim::testing::KeeperNames kNames{"rabbit_fixture", "node", "url", 60};

int Start(const std::string& dir) {
  return dedupsim::testing::StartKeeper(kNames, dir, [&dir](const auto& hold) {
    ::setenv("TMPDIR", dir.c_str(), 1);  // the node's folder: here, not in the tests' TMPDIR
    dedupsim::RabbitNode node = dedupsim::RabbitNode::Start();
    hold(node.url());
    node.Stop();
  });
}

int Stop(const std::string& dir) { return dedupsim::testing::StopKeeper(kNames, dir); }

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc == 4 && std::string(argv[1]) == "start") {
    std::error_code ec;
    fs::remove_all(argv[3], ec);
    fs::create_directories(argv[3], ec);
    return Start(argv[2]);
  }
  if (argc == 4 && std::string(argv[1]) == "stop") {
    int code = Stop(argv[2]);
    std::error_code ec;
    bool left = false;
    for (const auto& entry : fs::directory_iterator(argv[3], ec)) {
      std::fprintf(stderr, "rabbit_fixture: left in the tests' TMPDIR: %s\n", entry.path().c_str());
      left = true;
    }
    return code != 0 ? code : left ? 1 : 0;
  }
  std::fprintf(stderr, "usage: rabbit_fixture start|stop STATE_DIR TESTS_TMP\n");
  return 2;
}
