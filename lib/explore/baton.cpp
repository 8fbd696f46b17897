#include "explore/baton.h"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <system_error>
#include <thread>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define DEDUPSIM_ASAN_FIBERS 1
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define DEDUPSIM_TSAN_FIBERS 1
#endif

// The C++ runtime's per-thread exception state (Itanium C++ ABI, 2.5.3: "caughtExceptions"
// and "uncaughtExceptions"), which every fiber of a thread would otherwise share.
namespace __cxxabiv1 {
struct __cxa_eh_globals;
extern "C" __cxa_eh_globals* __cxa_get_globals() noexcept;
}  // namespace __cxxabiv1

namespace dedupsim::explore {

struct EhState {
  void* caught = nullptr;
  unsigned int uncaught = 0;
};

namespace {

EhState* ThreadEhState() { return reinterpret_cast<EhState*>(__cxxabiv1::__cxa_get_globals()); }

// As large as a thread's default stack: an instance's code (SQLite's parser, a consumer
// file's statements, libpq) ran on one. Reserved, not committed: only the pages a fiber
// touches cost memory. The lowest page is a guard, so an overflow faults as on a thread.
constexpr size_t kStackBytes = size_t{8} << 20;

}  // namespace

struct Baton::Fiber {
  ucontext_t context{};
  EhState eh;
  void* stack = nullptr;  // the mapping, guard page included; null for the scheduler's
  size_t stack_bytes = 0;
  std::function<void()> body;
  bool started = false;
  bool finished = false;
  // For ASan: the bottom and size of the stack it runs on (the scheduler's is learnt when a
  // fiber is first entered from it), and its fake stack while switched out.
  const void* bottom = nullptr;
  size_t size = 0;
  void* fake_stack = nullptr;
  void* tsan = nullptr;  // TSan's fiber (the scheduler's: the caller's thread)
  volatile bool resumed = false;  // ASan's switch: getcontext has returned the second time

  ~Fiber() {
#if defined(DEDUPSIM_TSAN_FIBERS)
    if (stack != nullptr && tsan != nullptr) __tsan_destroy_fiber(tsan);
#endif
#if defined(DEDUPSIM_ASAN_FIBERS)
    // A finished fiber's last frames never returned, so their poison is still in the
    // shadow; the next mapping at these addresses must not inherit it.
    if (stack != nullptr) __asan_unpoison_memory_region(bottom, size);
#endif
    if (stack != nullptr) munmap(stack, stack_bytes);
  }
};

Baton::Baton(size_t workers) : scheduler_(std::make_unique<Fiber>()) {
  workers_.resize(workers);
}

Baton::~Baton() = default;

void Baton::Spawn(int worker, std::function<void()> body) {
  auto f = std::make_unique<Fiber>();
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  f->stack_bytes = kStackBytes + page;
  f->stack = mmap(nullptr, f->stack_bytes, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (f->stack == MAP_FAILED) {
    f->stack = nullptr;
    throw std::system_error(errno, std::generic_category(), "an instance's stack");
  }
  if (mprotect(f->stack, page, PROT_NONE) != 0) {
    throw std::system_error(errno, std::generic_category(), "an instance's stack guard");
  }
  f->bottom = static_cast<char*>(f->stack) + page;
  f->size = kStackBytes;
  if (getcontext(&f->context) != 0) {
    throw std::system_error(errno, std::generic_category(), "getcontext");
  }
  f->context.uc_stack.ss_sp = const_cast<void*>(f->bottom);
  f->context.uc_stack.ss_size = f->size;
  f->context.uc_link = nullptr;  // Entry never returns: it switches back itself
  const auto self = reinterpret_cast<uintptr_t>(this);
  makecontext(&f->context, reinterpret_cast<void (*)()>(&Baton::Entry), 2,
              static_cast<unsigned>(self & 0xffffffffu), static_cast<unsigned>(self >> 32));
#if defined(DEDUPSIM_TSAN_FIBERS)
  f->tsan = __tsan_create_fiber(0);
#endif
  f->body = std::move(body);
  workers_.at(static_cast<size_t>(worker)) = std::move(f);
}

void Baton::Entry(unsigned lo, unsigned hi) {
  auto* baton = reinterpret_cast<Baton*>(uintptr_t{lo} | (uintptr_t{hi} << 32));
  Fiber& self = *baton->workers_[static_cast<size_t>(baton->running_)];
#if defined(DEDUPSIM_ASAN_FIBERS)
  __sanitizer_finish_switch_fiber(nullptr, &baton->scheduler_->bottom, &baton->scheduler_->size);
#endif
  try {
    self.body();
  } catch (...) {
    std::terminate();  // as an exception leaving a thread's function
  }
  self.finished = true;
  self.body = nullptr;
  baton->SwitchTo(self, *baton->scheduler_);  // never resumed
  std::terminate();
}

void Baton::SwitchTo(Fiber& from, Fiber& to) {
  EhState* eh = ThreadEhState();
  from.eh = *eh;
  *eh = to.eh;
#if defined(DEDUPSIM_TSAN_FIBERS)
  __tsan_switch_to_fiber(to.tsan, 0);
#endif
#if defined(DEDUPSIM_ASAN_FIBERS)
  __sanitizer_start_switch_fiber(from.finished ? nullptr : &from.fake_stack, to.bottom, to.size);
#endif
#if defined(DEDUPSIM_ASAN_FIBERS)
  // Not swapcontext: ASan's interceptor of it warns that it is not fully supported (a
  // report, which fails tools/sanitize.sh) and clears the shadow of the whole target stack.
  // The annotations above and below are what ASan needs.
  from.resumed = false;
  getcontext(&from.context);  // returns again when someone switches back to from
  if (!from.resumed) {
    from.resumed = true;
    setcontext(&to.context);
  }
#else
  swapcontext(&from.context, &to.context);
#endif
#if defined(DEDUPSIM_ASAN_FIBERS)
  // Resumed: whoever switched here ran on the stack it reports. Only the scheduler gives a
  // fiber the turn, so a fiber learns the scheduler's stack here.
  const void* old_bottom = nullptr;
  size_t old_size = 0;
  __sanitizer_finish_switch_fiber(from.fake_stack, &old_bottom, &old_size);
  if (&from != scheduler_.get()) {
    scheduler_->bottom = old_bottom;
    scheduler_->size = old_size;
  }
#endif
}

void Baton::Give(int worker) {
  Fiber& f = *workers_.at(static_cast<size_t>(worker));
  if (running_ != -1) throw std::logic_error("Baton::Give from a fiber");
  if (f.finished) return;  // its body is over: nothing to run
#if defined(DEDUPSIM_TSAN_FIBERS)
  scheduler_->tsan = __tsan_get_current_fiber();
#endif
  running_ = worker;
  SwitchTo(*scheduler_, f);
  running_ = -1;
}

void Baton::Yield(int worker) {
  if (running_ != worker) throw std::logic_error("Baton::Yield from a fiber without the turn");
  SwitchTo(*workers_[static_cast<size_t>(worker)], *scheduler_);
}

bool Baton::Finished(int worker) const { return workers_.at(static_cast<size_t>(worker))->finished; }

}  // namespace dedupsim::explore
