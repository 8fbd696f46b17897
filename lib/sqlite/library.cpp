#include "sqlite/library.h"

#include <sqlite3.h>

namespace dedupsim {

bool ConfigureSqliteLibrary() {
  // A function-local static: thread-safe, once per process.
  static const bool applied = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) == SQLITE_OK;
  return applied;
}

}  // namespace dedupsim
