// Running threads on one CPU: where a program whose threads take turns (one runs at a
// time, as the explorer's scheduler and its instances) gains nothing from a second CPU and
// loses a wake-up of an idle one at every hand-off.
#pragma once

#include <pthread.h>
#include <sched.h>

namespace dedupsim {

// The CPU the calling thread runs on now, when it may also run on others: the one to pin
// a group of threads to. -1 when the thread is already allowed only one CPU, or its
// affinity cannot be read: then leave every thread where it is.
int ChooseCpu();

// Allows thread to run on cpu only. False when the system refused.
bool PinThread(pthread_t thread, int cpu);

// Puts the calling thread on cpu for the object's lifetime (nothing when cpu is -1), then
// back on the CPUs it was allowed before. Use on the thread that made it.
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

}  // namespace dedupsim
