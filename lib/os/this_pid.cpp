#include "os/this_pid.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

namespace dedupsim {

namespace {

std::atomic<int> g_this_pid{0};  // 0: not read yet in this process

}  // namespace

int ThisPid() {
  int pid = g_this_pid.load(std::memory_order_relaxed);
  if (pid == 0) {
    static std::once_flag forget_at_fork;
    std::call_once(forget_at_fork, [] {
      ::pthread_atfork(nullptr, nullptr, [] { g_this_pid.store(0, std::memory_order_relaxed); });
    });
    pid = static_cast<int>(::getpid());
    g_this_pid.store(pid, std::memory_order_relaxed);
  }
  return pid;
}

}  // namespace dedupsim
