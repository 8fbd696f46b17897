// Memory shared by the instances of one bench run and the process that started them: an
// anonymous shared mapping made before any fork, so threads and child processes update
// the same counters. It holds no SQLite state (connections are never shared). The
// atomics are lock-free, hence address-free, and work across processes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace dedupsim {

// What one instance did, written by that instance only.
struct InstanceSlot {
  int64_t started_ns = 0;  // steady clock, the same across processes on one machine
  int64_t ended_ns = 0;
  int64_t handled = 0;
  int64_t busy_calls = 0;
  int64_t busy_waited_us = 0;
  int64_t commits = 0;
  int64_t rollbacks = 0;
  int64_t statements = 0;           // PostgreSQL: statements sent
  int32_t synchronous_commit = -1;  // PostgreSQL: 1 on, 0 off, as the server said; -1 unknown
  int32_t failed = 0;
  char error[512] = {};
};

class SharedBlock {
 public:
  // Maps room for `deliveries` latencies and outcomes and `instances` slots. Throws
  // std::runtime_error when mmap fails.
  SharedBlock(size_t deliveries, size_t instances);
  ~SharedBlock();
  SharedBlock(const SharedBlock&) = delete;
  SharedBlock& operator=(const SharedBlock&) = delete;

  std::atomic<int64_t>& next() { return header_->next; }    // next delivery to take
  std::atomic<int64_t>& done() { return header_->done; }    // deliveries handled
  std::atomic<int32_t>& ready() { return header_->ready; }  // instances set up (or failed)
  std::atomic<int32_t>& go() { return header_->go; }        // 1: start handling
  std::atomic<int32_t>& finished() { return header_->finished; }
  InstanceSlot& slot(size_t i) { return slots_[i]; }
  int64_t* latencies_ns() { return latencies_; }  // by delivery index
  int8_t* outcomes() { return outcomes_; }        // 1 processed, 2 skipped, 0 not handled

 private:
  struct Header {
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> done{0};
    std::atomic<int32_t> ready{0};
    std::atomic<int32_t> go{0};
    std::atomic<int32_t> finished{0};
  };
  static_assert(std::atomic<int64_t>::is_always_lock_free);
  static_assert(std::atomic<int32_t>::is_always_lock_free);

  void* base_ = nullptr;
  size_t size_ = 0;
  Header* header_ = nullptr;
  InstanceSlot* slots_ = nullptr;
  int64_t* latencies_ = nullptr;
  int8_t* outcomes_ = nullptr;
};

}  // namespace dedupsim
