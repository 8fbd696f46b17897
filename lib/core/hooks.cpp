#include "core/hooks.h"

namespace dedupsim {

void RunNotedHook(const NoteFn& note, const char* name, const Hook& hook,
                  const std::function<void()>& before) {
  try {
    if (before) before();
    note("hook", name, "");
    if (hook) hook();
  } catch (const SimulatedCrash&) {
    note("crash", name, "SimulatedCrash thrown");
    throw;
  }
}

Hook WithFault(const HookFaults& faults, const char* name, const Hook& hook) {
  Hook fault = faults ? faults(name) : Hook{};
  if (!fault) return hook;
  return [fault = std::move(fault), hook] {
    fault();
    if (hook) hook();
  };
}

Hook CrashHook(const std::string& name) {
  return [name] { throw SimulatedCrash(name); };
}

}  // namespace dedupsim
