// fork() for every child process dedupsim starts (crash runner, process instances, bench
// instances, soak consumers): a child never outlives its parent.
//
// ChildProcess owns a forked child: destroyed while the child is not reaped, it kills it
// (SIGKILL, which ends a stopped process too) and reaps it, so no path, an exception
// included, leaves a child running or a zombie behind.
//
// In the child, before anything else: PR_SET_PDEATHSIG(SIGKILL), then a check that the
// parent recorded before fork is still the parent (if it died before the prctl call, the
// signal will never come, so the child ends itself at once); SIGINT and SIGTERM go back to
// their defaults and are unblocked (the parent blocks them for its interrupt thread). In
// the parent the child is registered with run_files, so an interrupt kills it.
//
// A reaped child's wait status is what waitpid reported, or unknown (nullopt) when waitpid
// could not say (ECHILD: the child was reaped elsewhere, or SIGCHLD is ignored): never a
// made-up status, which would read as exit 0. Callers handle the unknown case as a death
// nobody planned (DescribeWaitStatus, os/pipe_io.h, says so).
#pragma once

#include <sys/types.h>

#include <optional>

namespace dedupsim {

// Like fork(): the child's pid in the parent, 0 in the child, -1 (errno set) on failure.
pid_t ForkChild();

// waitpid(pid, status, 0) retried after EINTR; forgets the child once reaped. False when
// waitpid failed (ECHILD: reaped elsewhere): *status is then not written.
bool WaitChild(pid_t pid, int* status);

class ChildProcess {
 public:
  // ForkChild(). In the parent, the owner of the new child; in the child, an owner of
  // nothing whose in_child() is true. Throws ProcessError (os/process_error.h) when fork
  // fails.
  static ChildProcess Fork();

  ChildProcess() = default;
  // The parent's owner of a child not reaped yet: SIGKILL, then reap. Never throws.
  ~ChildProcess();
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  bool in_child() const { return pid_ == 0; }
  pid_t pid() const { return pid_; }
  // True while the parent owns a child it has not reaped (it may have ended already).
  bool unreaped() const { return pid_ > 0 && !reaped_; }
  // Sends sig to the child while it is not reaped (a reaped pid may be someone else's).
  void Signal(int sig) const;
  // Waits for the child (WaitChild) once and returns its wait status (nullopt: unknown);
  // afterwards returns the same at once.
  std::optional<int> Wait();
  // Reaps the child if it has ended, without blocking (waitpid WNOHANG, retried after
  // EINTR); true once it is reaped, its wait status then in status() (nullopt when
  // waitpid failed: the child is gone, but how it ended is unknown).
  bool TryWait();
  // True when the child has ended, without reaping it (waitid WNOWAIT): its status is
  // left for Wait or TryWait. False once reaped.
  bool Ended() const;
  // SIGKILL, then Wait: the wait status (the child's own, if it had ended by itself first).
  std::optional<int> Kill();
  bool reaped() const { return reaped_; }
  // The wait status once reaped; nullopt before, or when waitpid could not tell.
  std::optional<int> status() const { return status_; }

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::optional<int> status_;
};

}  // namespace dedupsim
