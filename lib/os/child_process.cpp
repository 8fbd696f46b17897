#include "os/child_process.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <utility>

#include "os/pause_point.h"
#include "os/process_error.h"
#include "os/run_files.h"

namespace dedupsim {

pid_t ForkChild() {
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t parent = ::getpid();
  // Registered under the registry's lock: an interrupt finds it killed or not yet forked.
  const pid_t pid = run_files::ForkUnderLock(/*kill_on_interrupt=*/true);
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
  return pid;
}

bool WaitChild(pid_t pid, int* status) {
  pid_t got = 0;
  do {
    got = ::waitpid(pid, status, 0);
  } while (got < 0 && errno == EINTR);
  run_files::ForgetChild(pid);
  return got == pid;
}

ChildProcess ChildProcess::Fork() {
  const pid_t pid = ForkChild();
  if (pid < 0) throw SystemCallFailed("fork", errno);
  return ChildProcess(pid);
}

ChildProcess::~ChildProcess() {
  if (pid_ <= 0 || reaped_) return;
  ::kill(pid_, SIGKILL);
  Wait();
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), reaped_(other.reaped_), status_(other.status_) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    ChildProcess old(std::move(*this));  // killed and reaped, if it must be
    pid_ = std::exchange(other.pid_, -1);
    reaped_ = other.reaped_;
    status_ = other.status_;
  }
  return *this;
}

void ChildProcess::Signal(int sig) const {
  if (pid_ > 0 && !reaped_) ::kill(pid_, sig);
}

bool ChildProcess::TryWait() {
  if (pid_ <= 0) return false;
  if (reaped_) return true;
  int status = 0;
  pid_t got = 0;
  do {
    got = ::waitpid(pid_, &status, WNOHANG);
  } while (got < 0 && errno == EINTR);
  if (got == 0) return false;  // still running
  run_files::ForgetChild(pid_);
  reaped_ = true;
  // got < 0 (ECHILD): gone, but nobody can say how; not a made-up exit 0.
  if (got == pid_) status_ = status;
  return true;
}

bool ChildProcess::Ended() const {
  if (!unreaped()) return false;
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid_;
}

std::optional<int> ChildProcess::Kill() {
  Signal(SIGKILL);
  return Wait();
}

std::optional<int> ChildProcess::Wait() {
  if (pid_ > 0 && !reaped_) {
    int status = 0;
    if (WaitChild(pid_, &status)) status_ = status;
    reaped_ = true;
  }
  return status_;
}

}  // namespace dedupsim
