// Ctrl-C (SIGINT) and SIGTERM for the long-running commands: the handler only sets a flag,
// which the command's run polls to stop its instances cleanly and report or clean up.
#pragma once

namespace dedupsim::cli {

// Installs the handler, without SA_RESTART so a sleeping loop wakes at once.
void CatchInterrupts();
// True once SIGINT or SIGTERM arrived after CatchInterrupts.
bool Interrupted();

}  // namespace dedupsim::cli
