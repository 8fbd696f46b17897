// The baton that hands the turn between the scheduler's thread and its instances' threads:
// exactly one of them runs at a time. Whoever holds the baton runs; every other thread waits
// on its own futex word, so a hand-off wakes exactly one thread and costs one wake and one
// wait. Every change to state shared between them is made while holding the baton; the
// signals' release/acquire order those changes, so no other lock is needed.
//
// Thread-safety: Give is called by the scheduler's thread only; Yield, Await and Return by
// the worker named, from its own thread. A Baton must outlive every thread that uses it.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <vector>

namespace dedupsim::explore {

// A one-shot signal between two threads: Post lets exactly one Wait through. A futex word,
// so a hand-off costs one wake and one wait, with no mutex for the woken thread to take.
// The atomic's release/acquire orders everything the poster wrote before the waiter reads.
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

// The one permission to run, between the scheduler and `workers` worker threads.
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
