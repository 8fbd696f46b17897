// Inbox retention: the cleanup that keeps the Inbox from growing forever. It deletes
// completed records received before a cutoff and keeps the rest; a record still in
// progress is kept whatever its age, because it marks a side effect nobody has settled yet.
//
// The cutoff must lie further back than the longest path by which the broker can deliver
// the message again (delivery attempts, lock timeouts, time-to-live, and a replay from the
// dead-letter queue): a copy that arrives after its record is gone is processed again.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "core/clock.h"
#include "sqlite/connection.h"
#include "store/lesson_tables.h"

namespace dedupsim {

// Deletes, in one IMMEDIATE transaction, the Inbox records completed and received more
// than older_than before now.
CleanupResult DeleteInboxRecordsOlderThan(Connection& db, TimePoint now,
                                          std::chrono::milliseconds older_than);

}  // namespace dedupsim
