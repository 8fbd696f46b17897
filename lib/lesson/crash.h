// Runs one delivery that crashes at a hook point, in one of three ways:
//   throw: in this process, the hook throws SimulatedCrash (the post's way);
//   exit:  in a forked child that opens its own connection and calls _exit at the hook;
//   kill:  in a forked child that stops at the hook until the parent sends SIGKILL.
// In the two process modes the child's trace events and the emails it sent come back to
// the parent through a pipe before it dies, so the run's record is whole. A child that
// dies any other way is an UnplannedDeath, never taken for the planned crash.
#pragma once

#include <sys/types.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "consumers/email.h"
#include "core/hooks.h"
#include "lesson/scenario.h"
#include "os/child_process.h"
#include "os/process_error.h"
#include "os/unique_fd.h"
#include "store/store.h"

namespace dedupsim {

// A child process that died in a way the scenario did not plan (a bug, a signal from
// outside): a ProcessError, exit 4.
class UnplannedDeath : public ProcessError {
 public:
  using ProcessError::ProcessError;
};

struct CrashReport {
  bool crashed = false;  // the delivery reached the hook point and died there
  int pid = 0;           // the process that crashed
  std::string how;       // "SimulatedCrash", "_exit(86)", "SIGKILL"
  // On a server database (exit and kill, when the scenario gave a waiter): the waiter's
  // statement, started while the child stood at its crash point, as the server saw it.
  struct ServerRelease {
    bool measured = false;            // the waiter ran before the child died
    bool waited = false;              // it waited for a lock the child held
    std::string waited_on;            // "key Inbox", "row StockItems"
    std::vector<int> blocked_by;      // pg_blocking_pids while it waited: the child's backend
    int64_t held_after_death_us = 0;  // from the SIGKILL (or the exit order) to its answer
  } server;
};

inline constexpr int kPlannedExitCode = 86;

// Runs delivery(crash_hook). The delivery must open its own connection (a store of
// env.backend, or a connection to SqliteFileOf(env.backend); never one opened before the call) and
// install crash_hook at the point named `point`.
// Emails sent in a child are replayed into *emails, when given.
//
// On a server database (env.backend not SQLite) the child's connection is the server's to
// end: when the child dies the server sees the socket close and rolls its transaction back.
// With a waiter, exit and kill measure that from the other side: while the child stands at
// its crash point, waiter runs on a store of its own in a transaction (rolled back after),
// traced as the probe "waiter"; once the server shows it blocked (or it has ended without
// waiting), the child dies, and ServerRelease says how long after the death the waiter's
// statement got its answer.
CrashReport RunCrashingDelivery(ScenarioEnv& env, const std::string& instance,
                                const std::string& point,
                                const std::function<void(const Hook& crash)>& delivery,
                                InMemoryEmailProvider* emails = nullptr,
                                const std::function<void(Store&)>& waiter = {});

// A delivery run in a forked child (dies with this process) up to a hook point, where the
// child reports (its trace events, the emails it sent: merged into this process's record by
// AwaitHook) and stands still until this process ends it. The destructor SIGKILLs and reaps
// a child not reaped yet, on every path (also when it was stopped with SIGSTOP).
class ChildAtHook {
 public:
  enum class Ending {
    kSigkill,     // it pauses at the hook; End() sends SIGKILL
    kExitOnWord,  // it waits at the hook; End() tells it to _exit(kPlannedExitCode)
    kExitAtOnce,  // it calls _exit(kPlannedExitCode) right after reporting
  };
  ChildAtHook(ScenarioEnv& env, const std::string& instance, const std::string& point,
              const std::function<void(const Hook& crash)>& delivery, InMemoryEmailProvider* emails,
              Ending ending);
  ~ChildAtHook();
  ChildAtHook(const ChildAtHook&) = delete;
  ChildAtHook& operator=(const ChildAtHook&) = delete;

  // Waits for the child's report from the hook; false when it ended without reaching it.
  bool AwaitHook();
  pid_t pid() const { return child_.pid(); }
  // Ends the child as planned (SIGKILL, or the word to exit); Reap waits for it.
  void End();
  // SIGSTOP: the child hangs where it stands, its connection and transaction open. Waits
  // until the child is seen stopped (its wait status, left to be reaped later): true when
  // it stopped, false when it ended instead.
  bool Stop();
  // Waits for the child (once) and returns its wait status (nullopt: unknown, ChildProcess).
  std::optional<int> Reap();
  // How a wait status says the child ended: "killed by SIGKILL", "exited with status 3".
  static std::string HowItEnded(std::optional<int> status);
  // Reached the hook and died the planned way (after Reap).
  bool DiedAsPlanned() const;

 private:
  ScenarioEnv& env_;
  InMemoryEmailProvider* emails_;
  Ending end_;
  ChildProcess child_;  // declared first: destroyed last, after the pipes close
  UniqueFd report_fd_;  // the child's report from the hook
  UniqueFd word_fd_;    // kExitOnWord: the word to exit
  bool reached_ = false;
};

// The figures of a measured ServerRelease: {"waited": .., "waitedOn": .., "blockedBy": [..],
// "heldAfterDeathMs": ..}; null when nothing was measured.
nlohmann::ordered_json ServerReleaseFigures(const CrashReport& report);
// "; the waiter on its key Inbox got its answer 0.9 ms after the kill, the server having
// freed it" (or "; it held no lock the waiter needed"); "" when nothing was measured.
std::string ServerReleasePhrase(const CrashReport& report);

}  // namespace dedupsim
