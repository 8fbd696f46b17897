// SIGINT and SIGTERM, for every command: one mechanism. Interrupts are blocked in every
// thread (main() installs this before any thread or child exists) and a dedicated thread
// waits for them with sigwait. On the first one it kills and reaps every child the run
// forked, removes every file the run created (lib/os/run_files.h: temporary databases, a new
// --db not yet renamed into place, side stores, the temporary file of an output), says so
// on stderr and exits with kExitInterrupted (130). A kept --db is left as a crash would
// leave it: SQLite's journal or WAL keeps it valid, and the next open recovers it.
// SIGPIPE (the reader of stdout or stderr went away) comes to the thread that wrote: its
// handler sends the process SIGTERM, so it ends the same way, saying SIGPIPE.
#pragma once

namespace dedupsim::cli {

// Call first thing in main.
void InstallInterruptHandling();

}  // namespace dedupsim::cli
