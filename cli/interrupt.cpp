#include "interrupt.h"

#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "exit_status.h"
#include "os/run_files.h"

namespace dedupsim::cli {

namespace {

sigset_t InterruptSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

[[noreturn]] void WaitForInterrupt() {
  const sigset_t set = InterruptSignals();
  int signal = 0;
  while (sigwait(&set, &signal) != 0) {
  }
  const int removed = run_files::KillChildrenAndRemoveFiles();
  const std::string line =
      fmt::format("dedupsim: interrupted by {}: stopped; removed {} file(s) this run had created\n",
                  signal == SIGINT ? "SIGINT" : "SIGTERM", removed);
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
  ::_exit(kExitInterrupted);
}

}  // namespace

void InstallInterruptHandling() {
  const sigset_t set = InterruptSignals();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);  // inherited by every thread made later
  std::thread(WaitForInterrupt).detach();
}

}  // namespace dedupsim::cli
