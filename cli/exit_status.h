// The exit statuses of the dedupsim command, documented in --help, the README and
// docs/cli.md. Only cli/ knows them: lib/ reports what happened, the command maps it.
#pragma once

namespace dedupsim {

enum ExitStatus : int {
  kExitOk = 0,             // ran, and every check held
  kExitCheckFailed = 1,    // --check (or an invariant) found a difference
  kExitUsage = 2,          // unknown scenario, bad option or value
  kExitDatabase = 3,       // the database could not be used, or a child died unplanned
  kExitCannotWrite = 3,    // an output file (--timeline, a docs page) cannot be written
  kExitNotExhaustive = 4,  // check: no failure found, but a search was cut short by --budget
  kExitInterrupted = 130,  // SIGINT or SIGTERM: stopped, children killed, this run's files removed
};

}  // namespace dedupsim
