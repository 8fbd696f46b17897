// The CTest fixture of the `postgres` tests: one throwaway cluster (lib/postgres/cluster.h)
// shared by every test of the label, each test in its own schema.
//
//   pg_fixture start STATE_DIR   starts a keeper process that owns the cluster, writes the
//                                cluster's conninfo to STATE_DIR/conninfo and the keeper's
//                                pid to STATE_DIR/pid, and returns once the server answers.
//   pg_fixture stop STATE_DIR    asks the keeper to stop the cluster (SIGTERM), waits until
//                                the keeper is gone, removes the state files.
//
// The keeper detaches from CTest's output pipes (CTest waits for them to close) and starts
// its own session; the server dies with the keeper (PR_SET_PDEATHSIG).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "postgres/cluster.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;

void OnTerm(int) { g_stop = 1; }

int Stop(const std::string& dir);

int Start(const std::string& dir) {
  ::mkdir(dir.c_str(), 0755);
  // One cluster per state folder: a keeper recorded there (a start run twice, as
  // `ctest --repeat` does) is stopped first, or its cluster would outlive every stop.
  if (std::ifstream(dir + "/pid")) Stop(dir);
  std::remove((dir + "/conninfo").c_str());
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
    try {
      dedupsim::ThrowawayCluster cluster = dedupsim::ThrowawayCluster::Start();
      {
        std::ofstream(dir + "/pid") << ::getpid() << "\n";
        std::ofstream(dir + "/conninfo") << cluster.conninfo() << "\n";
      }
      (void)!::write(ready[1], "R", 1);
      ::close(ready[1]);
      while (!g_stop) ::pause();
      cluster.Stop();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "pg_fixture: %s\n", e.what());
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
    std::fprintf(stderr, "pg_fixture: the cluster did not start\n");
    return 3;
  }
  std::printf("pg_fixture: cluster up (keeper pid %d)\n", static_cast<int>(keeper));
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
    std::fprintf(stderr, "pg_fixture: no keeper recorded in %s/pid\n", dir.c_str());
    return 3;
  }
  ::kill(pid, SIGTERM);
  for (int i = 0; i < 3000 && Alive(pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (Alive(pid)) {
    std::fprintf(stderr, "pg_fixture: keeper %d did not stop in 30 s\n", pid);
    return 3;
  }
  std::remove((dir + "/pid").c_str());
  std::remove((dir + "/conninfo").c_str());
  std::printf("pg_fixture: cluster stopped and removed\n");
  return 0;
}

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
