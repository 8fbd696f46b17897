// What this process has created for the current run and must not leave behind when it is
// interrupted: temporary databases, a new --db under its temporary name, side stores, the
// temporary file of an output being written (each with the -wal, -shm and -journal files
// SQLite may add), and the child processes it forked.
//
// The objects that create such files register them here, under the registry's lock, in
// the same step that creates them, and forget them once they have removed them (or, for a
// new --db, once it has its final name and is kept). On SIGINT or SIGTERM the command
// line's interrupt thread calls KillChildrenAndRemoveFiles() and exits: the lock makes the
// create-and-register step atomic with respect to that cleanup, so a file is either
// registered or not yet created.
//
// Only the process that created the registry uses it: in a forked child every call is a
// no-op, so a child can never remove its parent's files.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <string_view>

namespace dedupsim {

namespace run_files {

// Runs create() under the registry's lock and, if it returns without throwing, registers
// the path it returns (with companions: also path-wal, path-shm, path-journal) for removal
// on interrupt. Returns that path.
std::string CreateAndRegister(const std::function<std::string()>& create, bool companions);
// Registers a path that already exists as ours (a file renamed to a name of ours).
void Register(const std::string& path, bool companions);
// Forgets path: it was removed, or is kept on purpose.
void Forget(const std::string& path);

// A forked child, killed with SIGKILL on interrupt; forgotten once reaped.
void RegisterChild(pid_t pid);
void ForgetChild(pid_t pid);

// fork() under the registry's lock, so an interrupt never falls between the fork and the
// registration: in the parent, with the lock still held, kill_on_interrupt registers the
// child (SIGKILL and reap, as RegisterChild) and then in_parent(pid) runs (it may only
// record the pid: calling run_files from it would deadlock). Returns as fork() does; in the
// child every later run_files call is a no-op, as in any forked child.
pid_t ForkUnderLock(bool kill_on_interrupt, const std::function<void(pid_t)>& in_parent = {});

// Something that is not a file (a server we started and its folder): cleanup runs on
// interrupt, before the children are killed; key names it for ForgetCleanup, which the
// owner calls before it cleans up itself (so the two never run at once).
void RegisterCleanup(const std::string& key, std::function<void()> cleanup);
void ForgetCleanup(const std::string& key);

// For the interrupt thread: SIGKILL and reap every registered child (initdb among them, so
// nothing writes into a folder a cleanup is about to remove), then run every registered
// cleanup (a server is stopped and reaped, its folder removed), then remove every
// registered file (and its companions). Returns how many files it removed, and sets
// *cleanups to how many cleanups it ran (servers stopped, folders removed). Leaves the
// registry locked, so nothing can be created or forked afterwards: call only just before
// _exit.
int KillChildrenAndRemoveFiles(int* cleanups = nullptr);

}  // namespace run_files

// A mkstemp pattern for a temporary file beside path: ".NAME.TAG-XXXXXX" in path's folder,
// or ".dedupsim-TAG-XXXXXX" when that would be longer than the folder allows a name.
std::string TemporaryNameBeside(const std::string& path, std::string_view tag);

}  // namespace dedupsim
