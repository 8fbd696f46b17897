// The exit statuses of the dedupsim command, documented in --help and docs/cli.md.
#pragma once

namespace dedupsim {

enum ExitStatus : int {
  kExitOk = 0,             // ran, and every check held
  kExitCheckFailed = 1,    // --check (or an invariant) found a difference
  kExitUsage = 2,          // unknown scenario, bad option or value
  kExitDatabase = 3,       // the database could not be used, or a child died unplanned
  kExitCannotWrite = 3,    // an output file (--timeline, a docs page) cannot be written
  kExitInterrupted = 130,  // Ctrl-C or SIGTERM: stopped, and what was started is removed
};

}  // namespace dedupsim
