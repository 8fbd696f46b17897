#include "keeper.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>
#include <fstream>
#include <thread>

namespace dedupsim::testing {
namespace {

volatile std::sig_atomic_t g_stop = 0;

void OnTerm(int) { g_stop = 1; }

// Alive and not a zombie (a reparented keeper may wait for a reaper that never comes).
bool Alive(int pid) {
  if (::kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  auto close = text.rfind(')');
  return close == std::string::npos || close + 2 >= text.size() || text[close + 2] != 'Z';
}

}  // namespace

int StartKeeper(const KeeperNames& names, const std::string& dir, const Serve& serve) {
  ::mkdir(dir.c_str(), 0755);
  // One server per state folder: a keeper recorded there (a start run twice, as
  // `ctest --repeat` does) is stopped first, or its server would outlive every stop.
  if (std::ifstream(dir + "/pid")) StopKeeper(names, dir);
  std::remove((dir + "/" + names.address_file).c_str());
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
      serve([&](const std::string& address) {
        {
          std::ofstream(dir + "/pid") << ::getpid() << "\n";
          std::ofstream(dir + "/" + names.address_file) << address << "\n";
        }
        (void)!::write(ready[1], "R", 1);
        ::close(ready[1]);
        while (!g_stop) ::pause();
      });
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", names.tool, e.what());
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
    std::fprintf(stderr, "%s: the %s did not start\n", names.tool, names.server);
    return 3;
  }
  std::printf("%s: %s up (keeper pid %d)\n", names.tool, names.server, static_cast<int>(keeper));
  return 0;
}

int StopKeeper(const KeeperNames& names, const std::string& dir) {
  std::ifstream in(dir + "/pid");
  int pid = 0;
  if (!(in >> pid) || pid <= 0) {
    std::fprintf(stderr, "%s: no keeper recorded in %s/pid\n", names.tool, dir.c_str());
    return 3;
  }
  ::kill(pid, SIGTERM);
  for (int i = 0; i < names.stop_seconds * 100 && Alive(pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (Alive(pid)) {
    std::fprintf(stderr, "%s: keeper %d did not stop in %d s\n", names.tool, pid,
                 names.stop_seconds);
    return 3;
  }
  std::remove((dir + "/pid").c_str());
  std::remove((dir + "/" + names.address_file).c_str());
  std::printf("%s: %s stopped and removed\n", names.tool, names.server);
  return 0;
}

}  // namespace dedupsim::testing
