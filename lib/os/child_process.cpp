#include "os/child_process.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "os/pause_point.h"
#include "os/run_files.h"

namespace dedupsim {

pid_t ForkChild() {
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    StopHere("child-forked");  // tests kill the parent here, before the prctl
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(111);  // the parent died before the prctl
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    PauseHere("child-started");  // tests kill the parent here, after the prctl
    return 0;
  }
  if (pid > 0) run_files::RegisterChild(pid);
  return pid;
}

void WaitChild(pid_t pid, int* status) {
  while (::waitpid(pid, status, 0) < 0 && errno == EINTR) {
  }
  run_files::ForgetChild(pid);
}

}  // namespace dedupsim
