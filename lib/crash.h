// Runs one delivery that crashes at a hook point, in one of three ways:
//   throw: in this process, the hook throws SimulatedCrash (the post's way);
//   exit:  in a forked child that opens its own connection and calls _exit at the hook;
//   kill:  in a forked child that stops at the hook until the parent sends SIGKILL.
// In the two process modes the child's trace events and the emails it sent come back to
// the parent through a pipe before it dies, so the run's record is whole. A child that
// dies any other way is an UnplannedDeath, never taken for the planned crash.
#pragma once

#include <functional>
#include <string>

#include "consumers/email.h"
#include "hooks.h"
#include "scenario.h"
#include "sqlite/error.h"

namespace dedupsim {

// A child process that died in a way the scenario did not plan (a bug, a signal from
// outside). Maps to exit 3, like a database error.
class UnplannedDeath : public DatabaseError {
 public:
  using DatabaseError::DatabaseError;
};

struct CrashReport {
  bool crashed = false;  // the delivery reached the hook point and died there
  int pid = 0;           // the process that crashed
  std::string how;       // "SimulatedCrash", "_exit(86)", "SIGKILL"
};

inline constexpr int kPlannedExitCode = 86;

// Runs delivery(crash_hook). The delivery must open its own connection from env.db (never
// one opened before the call) and install crash_hook at the point named `point`.
// Emails sent in a child are replayed into *emails, when given.
CrashReport RunCrashingDelivery(ScenarioEnv& env, const std::string& instance,
                                const std::string& point,
                                const std::function<void(const Hook& crash)>& delivery,
                                InMemoryEmailProvider* emails = nullptr);

}  // namespace dedupsim
