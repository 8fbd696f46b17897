#include "hooks.h"

#include "sqlite/connection.h"

namespace dedupsim {

void RunHook(Connection& connection, const char* name, const Hook& hook) {
  try {
    if (connection.gate() != nullptr) connection.gate()->BeforeHook(connection, name);
    connection.Note("hook", name, "");
    if (connection.hook_faults()) {
      if (Hook fault = connection.hook_faults()(name)) fault();
    }
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
