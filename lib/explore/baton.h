// The baton that hands the turn between the scheduler and its instances: exactly one of them
// runs at a time. Each instance is a fiber (a stack of its own, ucontext) on the scheduler's
// thread, so handing the turn over is a switch of stacks in user space, with no thread to
// wake and no other CPU involved. (Each instance was a thread, woken through a futex: the
// hand-offs were most of a schedule's cost, docs/performance.md.)
//
// An instance's code runs on its fiber exactly as it ran on its own thread: it parks (Yield)
// inside a SQLite busy handler, inside a PostgreSQL wait, inside a catch block, in a
// destructor during unwinding. The C++ runtime's per-thread exception state (the exceptions
// being handled, the count of those in flight) is saved and restored at every switch, so a
// fiber parked inside a catch block and another one throwing never see each other's. ASan
// and TSan are told of every switch.
//
// Thread-safety: none is needed: the scheduler and its fibers run on one thread, the one
// that calls Give, the same one for the Baton's life (a fiber parked mid-body must resume
// on the thread it parked on: its frames may hold that thread's thread-local addresses).
// Give is called outside every fiber; Yield on the fiber named, while it has the turn. A
// Baton must outlive its fibers' runs; destroying it frees their stacks, so every body must
// have ended (Finished) or never be given the turn again.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

namespace dedupsim::explore {

class Baton {
 public:
  explicit Baton(size_t workers);
  ~Baton();
  Baton(const Baton&) = delete;
  Baton& operator=(const Baton&) = delete;

  // Makes worker's fiber, which runs body from the first Give. An exception leaving body
  // ends the process (std::terminate), as one leaving a thread's function did.
  void Spawn(int worker, std::function<void()> body);

  // Scheduler: gives the turn to worker and returns when it is handed back (Yield, or the
  // end of its body). Does nothing once the body has ended.
  void Give(int worker);

  // Worker: hands the turn back; returns when it is given again.
  void Yield(int worker);

  // True once worker's body has returned.
  bool Finished(int worker) const;

  struct Fiber;

 private:
  void SwitchTo(Fiber& from, Fiber& to);

  std::unique_ptr<Fiber> scheduler_;  // the context of whoever called Give
  std::vector<std::unique_ptr<Fiber>> workers_;
  int running_ = -1;  // the worker whose fiber runs, or -1: the scheduler

  static void Entry(unsigned lo, unsigned hi);
};

}  // namespace dedupsim::explore
