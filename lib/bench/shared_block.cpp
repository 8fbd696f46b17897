#include "bench/shared_block.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace dedupsim {

namespace {

size_t RoundUp(size_t n) { return (n + 63) / 64 * 64; }

}  // namespace

SharedBlock::SharedBlock(size_t deliveries, size_t instances) {
  const size_t header = RoundUp(sizeof(Header));
  const size_t slots = RoundUp(sizeof(InstanceSlot) * instances);
  const size_t latencies = RoundUp(sizeof(int64_t) * deliveries);
  size_ = header + slots + latencies + RoundUp(deliveries);
  base_ = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (base_ == MAP_FAILED) {
    base_ = nullptr;
    throw std::runtime_error(std::string("mmap: ") + std::strerror(errno));
  }
  auto* bytes = static_cast<char*>(base_);
  header_ = new (bytes) Header();
  slots_ = reinterpret_cast<InstanceSlot*>(bytes + header);
  for (size_t i = 0; i < instances; ++i) new (&slots_[i]) InstanceSlot();
  latencies_ = reinterpret_cast<int64_t*>(bytes + header + slots);
  outcomes_ = reinterpret_cast<int8_t*>(bytes + header + slots + latencies);
}

SharedBlock::~SharedBlock() {
  if (base_ != nullptr) munmap(base_, size_);
}

}  // namespace dedupsim
