#include "hooks.h"

#include "sqlite/connection.h"

namespace dedupsim {

void RunHook(Connection& connection, const char* name, const Hook& hook) {
  try {
    if (connection.gate() != nullptr) connection.gate()->BeforeHook(connection, name);
    connection.Note("hook", name, "");
    if (hook) hook();
  } catch (const SimulatedCrash&) {
    connection.Note("crash", name, "crash");
    throw;
  }
}

Hook CrashHook(const std::string& name) {
  return [name] { throw SimulatedCrash(name); };
}

}  // namespace dedupsim
