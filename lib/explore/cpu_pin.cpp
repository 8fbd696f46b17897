#include "explore/cpu_pin.h"

namespace dedupsim::explore {

int ChooseCpu() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (pthread_getaffinity_np(pthread_self(), sizeof allowed, &allowed) != 0) return -1;
  if (CPU_COUNT(&allowed) <= 1) return -1;  // already on one CPU
  int here = sched_getcpu();
  if (here >= 0 && here < CPU_SETSIZE && CPU_ISSET(static_cast<size_t>(here), &allowed))
    return here;
  for (size_t cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) return static_cast<int>(cpu);
  }
  return -1;
}

bool PinThread(pthread_t thread, int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(static_cast<size_t>(cpu), &one);
  return pthread_setaffinity_np(thread, sizeof one, &one) == 0;
}

PinCaller::PinCaller(int cpu) {
  if (cpu < 0) return;
  CPU_ZERO(&saved_);
  if (pthread_getaffinity_np(pthread_self(), sizeof saved_, &saved_) != 0) return;
  pinned_ = PinThread(pthread_self(), cpu);
}

PinCaller::~PinCaller() {
  if (pinned_) pthread_setaffinity_np(pthread_self(), sizeof saved_, &saved_);
}

}  // namespace dedupsim::explore
