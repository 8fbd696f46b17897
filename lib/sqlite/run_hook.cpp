#include "sqlite/run_hook.h"

#include "sqlite/connection.h"

namespace dedupsim {

void RunHook(Connection& connection, const char* name, const Hook& hook) {
  // A lesson's fault at this point (Connection::SetHookFaults) runs first, then the
  // consumer's own hook.
  Hook fault = connection.hook_faults() ? connection.hook_faults()(name) : Hook{};
  Hook with_fault;
  if (fault) {
    with_fault = [&fault, &hook] {
      fault();
      if (hook) hook();
    };
  }
  RunNotedHook([&connection](const std::string& kind, const std::string& detail,
                             const std::string& result) { connection.Note(kind, detail, result); },
               name, fault ? with_fault : hook,
               [&connection, name] {
                 if (connection.gate() != nullptr) connection.gate()->BeforeHook(connection, name);
               });
}

}  // namespace dedupsim
