// fork() for every child process dedupsim starts (crash runner, process instances, bench
// instances, soak consumers): a child never outlives its parent.
//
// In the child, before anything else: PR_SET_PDEATHSIG(SIGKILL), then a check that the
// parent recorded before fork is still the parent (if it died before the prctl call, the
// signal will never come, so the child ends itself at once); SIGINT and SIGTERM go back to
// their defaults and are unblocked (the parent blocks them for its interrupt thread). In
// the parent the child is registered with run_files, so an interrupt kills it.
#pragma once

#include <sys/types.h>

namespace dedupsim {

// Like fork(): the child's pid in the parent, 0 in the child, -1 (errno set) on failure.
pid_t ForkChild();

// waitpid(pid, status, 0) retried after EINTR; forgets the child once reaped.
void WaitChild(pid_t pid, int* status);

}  // namespace dedupsim
