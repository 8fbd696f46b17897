// SQLite's explorer database (store/explore_database.h): a temporary file for the
// service's tables, and a second one when a row keeps a side store (or a test's own
// tables); a control connection on each for the resets and the read-backs, never
// scheduled; each instance's session one connection per file, its StepGate reporting to
// the instance's ExploreGate. A consumer file's schema runs sandboxed (sqlite/sandbox.h).
// Only lib/backends/databases.cpp opens one.
#pragma once

#include <memory>
#include <span>

#include "store/database_settings.h"
#include "store/explore_database.h"

namespace dedupsim {

// Creates the files and every row's tables (a second file only when a row keeps one).
// Throws what the schema throws (SqlRefused for a file's schema), DatabaseError when the
// files cannot be made.
std::unique_ptr<ExploreDatabase> OpenSqliteExploreDatabase(const DatabaseSettings& settings,
                                                          std::span<const ExploreRow> rows);

}  // namespace dedupsim
