// A hook point on a SQLite connection: the Connection& overload of RunNotedHook
// (core/hooks.h), for the code that holds a Connection rather than a Store.
#pragma once

#include "core/hooks.h"

namespace dedupsim {

class Connection;

// Records the hook on the connection's trace and runs it. A SimulatedCrash is recorded as
// a crash and rethrown.
void RunHook(Connection& connection, const char* name, const Hook& hook);

}  // namespace dedupsim
