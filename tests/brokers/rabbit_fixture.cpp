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
// The keeper detaches from CTest's output pipes (CTest waits for them to close) and starts
// its own session; the node and its epmd die with the keeper (PR_SET_PDEATHSIG). The node's
// folder is in STATE_DIR (TMPDIR), never in the tests' own temporary folder.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "world/broker/rabbitmq_node.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;

void OnTerm(int) { g_stop = 1; }

int Stop(const std::string& dir);

int Start(const std::string& dir) {
  ::mkdir(dir.c_str(), 0755);
  // One node per state folder: a keeper recorded there (a start run twice, as
  // `ctest --repeat` does) is stopped first, or its node would outlive every stop.
  if (std::ifstream(dir + "/pid")) Stop(dir);
  std::remove((dir + "/url").c_str());
  int ready[2];
  if (::pipe(ready) != 0) return 3;
  pid_t keeper = ::fork();
  if (keeper < 0) return 3;
  if (keeper == 0) {
    ::close(ready[0]);
    ::setsid();
    int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, STDIN_FILENO);
    ::dup2(null, STDOUT_FILENO);
    std::string log = dir + "/keeper.log";
    int err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err >= 0) ::dup2(err, STDERR_FILENO);
    struct sigaction sa {};
    sa.sa_handler = &OnTerm;
    ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGINT, &sa, nullptr);
    ::setenv("TMPDIR", dir.c_str(), 1);  // the node's folder: here, not in the tests' TMPDIR
    try {
      dedupsim::RabbitNode node = dedupsim::RabbitNode::Start();
      {
        std::ofstream(dir + "/pid") << ::getpid() << "\n";
        std::ofstream(dir + "/url") << node.url() << "\n";
      }
      (void)!::write(ready[1], "R", 1);
      ::close(ready[1]);
      while (!g_stop) ::pause();
      node.Stop();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rabbit_fixture: %s\n", e.what());
      (void)!::write(ready[1], "F", 1);
      ::_exit(3);
    }
    ::_exit(0);
  }
  ::close(ready[1]);
  char answer = 0;
  ssize_t n = ::read(ready[0], &answer, 1);
  ::close(ready[0]);
  if (n != 1 || answer != 'R') {
    std::ifstream log(dir + "/keeper.log");
    std::string line;
    while (std::getline(log, line)) std::fprintf(stderr, "%s\n", line.c_str());
    std::fprintf(stderr, "rabbit_fixture: the node did not start\n");
    return 3;
  }
  std::printf("rabbit_fixture: node up (keeper pid %d)\n", static_cast<int>(keeper));
  return 0;
}

// Alive and not a zombie (a reparented keeper may wait for a reaper that never comes).
bool Alive(int pid) {
  if (::kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  auto close = text.rfind(')');
  return close == std::string::npos || close + 2 >= text.size() || text[close + 2] != 'Z';
}

int Stop(const std::string& dir) {
  std::ifstream in(dir + "/pid");
  int pid = 0;
  if (!(in >> pid) || pid <= 0) {
    std::fprintf(stderr, "rabbit_fixture: no keeper recorded in %s/pid\n", dir.c_str());
    return 3;
  }
  ::kill(pid, SIGTERM);
  for (int i = 0; i < 6000 && Alive(pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (Alive(pid)) {
    std::fprintf(stderr, "rabbit_fixture: keeper %d did not stop in 60 s\n", pid);
    return 3;
  }
  std::remove((dir + "/pid").c_str());
  std::remove((dir + "/url").c_str());
  std::printf("rabbit_fixture: node stopped and removed\n");
  return 0;
}

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
