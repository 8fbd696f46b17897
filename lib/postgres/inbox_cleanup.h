// The nightly Inbox cleanup (sqlite/retention.h) on a PostgreSQL schema dedupsim created: the same
// rule (completed records received before the cutoff go; records in progress stay,
// whatever their age) and the same result, in one transaction on the connection.
#pragma once

#include <chrono>

#include "core/clock.h"
#include "postgres/connection.h"
#include "store/lesson_tables.h"

namespace dedupsim {

CleanupResult DeleteInboxRecordsOlderThan(PgConnection& db, TimePoint now,
                                          std::chrono::milliseconds older_than);

}  // namespace dedupsim
