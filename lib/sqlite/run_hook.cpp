#include "sqlite/run_hook.h"

#include "sqlite/connection.h"

namespace dedupsim {

void RunHook(Connection& connection, const char* name, const Hook& hook) {
  // A lesson's fault at this point (Connection::SetHookFaults) runs first, then the
  // consumer's own hook.
  const bool faults = static_cast<bool>(connection.hook_faults());
  const Hook with_fault = faults ? WithFault(connection.hook_faults(), name, hook) : Hook{};
  RunNotedHook([&connection](const std::string& kind, const std::string& detail,
                             const std::string& result) { connection.Note(kind, detail, result); },
               name, faults ? with_fault : hook,
               [&connection, name] {
                 if (connection.gate() != nullptr) connection.gate()->BeforeHook(connection, name);
               });
}

}  // namespace dedupsim
