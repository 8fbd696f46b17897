// The scheduler's hand-off between threads: exactly one thread runs at a time.
//
// Signal is a one-shot wake-up between two threads (a futex word): Post lets exactly one
// Wait through, with no mutex for the woken thread to take; its release/acquire orders
// everything the poster wrote before the waiter reads it.
//
// Baton is the one permission to run, passed between the scheduler and its workers (by
// index, 0 to workers - 1). Whoever holds it runs; everyone else waits on their own signal,
// so a hand-off wakes exactly one thread. Every change to state the threads share happens
// while holding the baton; the signals order those changes. A Baton is shared by the
// scheduler and its workers and outlives them all; each worker calls only with its own
// index.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dedupsim::explore {

class Signal {
 public:
  void Post() {
    word_.store(1, std::memory_order_release);
    syscall(SYS_futex, &word_, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  }
  void Wait() {
    while (word_.exchange(0, std::memory_order_acquire) == 0) {
      syscall(SYS_futex, &word_, FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
    }
  }

 private:
  std::atomic<uint32_t> word_{0};
};

class Baton {
 public:
  explicit Baton(size_t workers) : workers_(workers) {}

  // Scheduler: gives the baton to worker and waits until it is handed back.
  void Give(int worker) {
    workers_[Slot(worker)].Post();
    scheduler_.Wait();
  }

  // Worker: hands the baton back and waits until it is given again.
  void Yield(int worker) {
    scheduler_.Post();
    workers_[Slot(worker)].Wait();
  }

  // Worker: waits for the baton (between runs).
  void Await(int worker) { workers_[Slot(worker)].Wait(); }

  // Worker: hands the baton back and goes on without it (to Await, or to exit).
  void Return() { scheduler_.Post(); }

 private:
  static size_t Slot(int worker) { return static_cast<size_t>(worker); }

  Signal scheduler_;
  std::vector<Signal> workers_;
};

}  // namespace dedupsim::explore
