#include "hooks.h"

#include "sqlite/connection.h"

namespace dedupsim {

void RunNotedHook(const NoteFn& note, const char* name, const Hook& hook,
                  const std::function<void()>& before) {
  try {
    if (before) before();
    note("hook", name, "");
    if (hook) hook();
  } catch (const SimulatedCrash&) {
    note("crash", name, "crash");
    throw;
  }
}

void RunHook(Connection& connection, const char* name, const Hook& hook) {
  RunNotedHook([&connection](const std::string& kind, const std::string& detail,
                             const std::string& result) { connection.Note(kind, detail, result); },
               name, hook,
               [&connection, name] {
                 if (connection.gate() != nullptr) connection.gate()->BeforeHook(connection, name);
               });
}

Hook CrashHook(const std::string& name) {
  return [name] { throw SimulatedCrash(name); };
}

}  // namespace dedupsim
