// Process-wide SQLite settings, applied once, before SQLite initialises (the first open):
// memory statistics off (SQLITE_CONFIG_MEMSTATUS 0), which saves a mutex-free counter update
// on every allocation SQLite makes. dedupsim reads no SQLite memory statistic. Every
// connection of the process runs with the same settings: the library's and the bench's raw
// baseline alike.
#pragma once

namespace dedupsim {

// Applies the settings the first time it is called; later calls do nothing. Returns true
// when they took effect, false when SQLite was already initialised by someone else (then
// it runs with its defaults). Call it before any sqlite3_open.
bool ConfigureSqliteLibrary();

}  // namespace dedupsim
