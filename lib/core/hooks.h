// Hook points: the named moments in a consumer where a scenario can step in, as in the
// post (AfterStockCommitted, BeforeCommit, AfterSend). A hook may wait, end the process,
// or throw SimulatedCrash, which stands for the process dying at that point.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace dedupsim {

using Hook = std::function<void()>;

// Thrown by a hook to simulate a crash inside the process (the post's `throw new
// Exception("crash")`). Scenarios catch exactly this type; anything else is a real error.
class SimulatedCrash : public std::runtime_error {
 public:
  explicit SimulatedCrash(const std::string& at) : std::runtime_error("simulated crash at " + at) {}
};

// Where a hook's steps are recorded: (kind, detail, result), as Connection::Note.
using NoteFn = std::function<void(const std::string&, const std::string&, const std::string&)>;

// Runs before (a scheduler's turn, may throw SimulatedCrash), notes the hook ("hook"),
// runs it; a SimulatedCrash is noted ("crash") and rethrown. The one place that says how
// a hook point appears on a trace, for every backend.
void RunNotedHook(const NoteFn& note, const char* name, const Hook& hook,
                  const std::function<void()>& before = {});

// A lesson's faults at named hook points (a crash, a sleep): the hook to run at a point,
// before the consumer's own, or an empty Hook where the lesson has none.
using HookFaults = std::function<Hook(std::string_view point)>;

// What runs at hook point name: the fault faults gives there (if any), then hook.
Hook WithFault(const HookFaults& faults, const char* name, const Hook& hook);

// A hook that throws SimulatedCrash(name).
Hook CrashHook(const std::string& name);

}  // namespace dedupsim
