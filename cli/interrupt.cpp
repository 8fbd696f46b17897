#include "interrupt.h"

#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "exit_status.h"
#include "os/pause_point.h"
#include "os/run_files.h"

extern char** environ;

namespace dedupsim::cli {

namespace {

sigset_t InterruptSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

// Set by the SIGPIPE handler before it sends this process SIGTERM: the reader of our
// output went away (`dedupsim run all | head -1`).
std::atomic<bool> g_broken_pipe{false};

// SIGPIPE comes to the thread that wrote, not to the interrupt thread's sigwait: turned
// into a SIGTERM to the process, so the run ends as an interrupted one (its children
// killed, its files removed) instead of dying with its files left behind. Only
// async-signal-safe calls; the write that raised it then fails with EPIPE.
void OnBrokenPipe(int) {
  g_broken_pipe.store(true);
  ::kill(::getpid(), SIGTERM);
}

// Kills and reaps the children, runs the cleanups, removes the run's files, says so and
// exits 130.
[[noreturn]] void Interrupted(int signal) {
  int cleanups = 0;
  const int removed = run_files::KillChildrenAndRemoveFiles(&cleanups);
  // The folders (a server's, a class member's TMPDIR) go by their cleanups, not as files:
  // counted apart, so "removed 0 file(s)" never stands alone for a run that removed folders.
  const std::string folders =
      cleanups > 0 ? fmt::format("; stopped or removed {} server(s) or folder(s)", cleanups)
                   : std::string();
  const std::string line =
      fmt::format("dedupsim: interrupted by {}: stopped; removed {} file(s) this run had created{}\n",
                  signal == SIGINT              ? "SIGINT"
                  : g_broken_pipe.load()        ? "SIGPIPE (the reader of its output went away)"
                                                : "SIGTERM",
                  removed, folders);
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
  ::_exit(kExitInterrupted);
}

[[noreturn]] void WaitForInterrupt() {
  const sigset_t set = InterruptSignals();
  int signal = 0;
  while (sigwait(&set, &signal) != 0) {
  }
  Interrupted(signal);
}

// Runs before anything else of the program: before the constructors of the libraries it
// links and of its own statics, before main (an executable's .preinit_array runs right
// after the dynamic loader has mapped and relocated it). From here on SIGINT and SIGTERM
// wait, pending, for the interrupt thread, so a signal in the program's first milliseconds
// ends it with 130 like any other. Only the loader's own work comes before.
void BlockInterruptsFirst(int, char**, char** envp) {
  const sigset_t set = InterruptSignals();
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  // libc sets environ from envp only in its own initialisation, which comes later; the
  // test build's pause point reads it now.
  if (environ == nullptr) environ = envp;
  StopHere("program-start");  // tests signal the process here, before main
}

[[gnu::section(".preinit_array"), gnu::used]] void (*const kBlockInterruptsFirst)(int, char**,
                                                                                 char**) =
    &BlockInterruptsFirst;

}  // namespace

void InstallInterruptHandling() {
  const sigset_t set = InterruptSignals();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);  // already blocked; inherited by every thread
  // A signal that came before main waits, pending: answered here, before any work (the
  // thread below might not be waiting yet when a short command ends, and the interrupt
  // would go unanswered, exit 0).
  const timespec now{0, 0};
  const int pending = ::sigtimedwait(&set, nullptr, &now);
  if (pending == SIGINT || pending == SIGTERM) Interrupted(pending);
  struct sigaction pipe_action {};
  pipe_action.sa_handler = OnBrokenPipe;
  sigemptyset(&pipe_action.sa_mask);
  ::sigaction(SIGPIPE, &pipe_action, nullptr);
  std::thread(WaitForInterrupt).detach();
}

}  // namespace dedupsim::cli
