// File descriptors as owners. A UniqueFd closes its descriptor when it is destroyed or
// reset, unless released; it is moved, never copied. A Pipe is the two ends of a pipe(2),
// each a UniqueFd, so a failure between pipe() and fork() (or in either process after it)
// leaks no end. Not thread-safe: one owner at a time, like the int it holds.
#pragma once

#include <utility>

namespace dedupsim {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  // Gives the descriptor up without closing it; -1 if none.
  int release() { return std::exchange(fd_, -1); }
  // Closes the descriptor held (if any), then holds fd.
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

// pipe2(2) with flags (O_CLOEXEC: neither end survives an exec, so a child that execs
// holds no other child's pipe open). Throws ProcessError (os/process_error.h) when the
// system refuses.
Pipe MakePipe(int flags = 0);

}  // namespace dedupsim
