// Keeping the scheduler's thread and its instances' threads on one CPU while a plan runs.
// Only one of them runs at a time anyway (baton.h); on one CPU a hand-off does not wake
// another, idle CPU. Failing to pin is not an error: the threads then run anywhere.
#pragma once

#include <pthread.h>
#include <sched.h>

namespace dedupsim::explore {

// The CPU the scheduler and its instances share, or -1 to leave them where they are (the
// caller may already run on one CPU only, or its affinity cannot be read).
int ChooseCpu();

// Puts thread on cpu. False when the system refused.
bool PinThread(pthread_t thread, int cpu);

// Puts the calling thread on cpu for its lifetime, then back where it was allowed to run.
// cpu < 0: does nothing.
class PinCaller {
 public:
  explicit PinCaller(int cpu);
  ~PinCaller();
  PinCaller(const PinCaller&) = delete;
  PinCaller& operator=(const PinCaller&) = delete;

 private:
  cpu_set_t saved_;
  bool pinned_ = false;
};

}  // namespace dedupsim::explore
