// dedupsim's own set-up connections on a temporary database (its marker and schema, the
// switch to WAL, each scenario's restock) run with synchronous OFF: neither their commits
// nor the checkpoint when they close call fsync. The lesson's connections to a temporary
// database do not checkpoint when they close (DatabaseFile::Connect); a set-up connection
// checkpoints when it starts, unsynced, and its writes start a new log, so each lesson
// finds in the log only its own set-up's frames. A temporary file is read by this run only
// and removed at its end. The lesson's own connections (DatabaseFile::Connect) keep the
// journal and synchronous settings asked for, and a kept --db is set up durably.
#pragma once

#include "sqlite/connection.h"

namespace dedupsim {

// Sets synchronous OFF on connection and checkpoints the log (PASSIVE, unsynced) when
// temporary is true; does nothing otherwise.
void SetUpWithoutFsync(Connection& connection, bool temporary);

}  // namespace dedupsim
