#include "core/message.h"

#include <fmt/format.h>

namespace dedupsim {

IdGenerator::IdGenerator() : rng_(std::random_device{}()) {}

IdGenerator::IdGenerator(uint64_t seed) : rng_(seed) {}

std::string PayloadHash(const OrderPlaced& message) {
  std::string content =
      fmt::format("{}|{}|{}", message.order_id, message.book_id, message.quantity);
  uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a 64 offset basis
  for (char c : content) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;  // FNV prime
  }
  // MurmurHash3's finaliser, so that a one-character change alters every digit.
  hash ^= hash >> 33;
  hash *= 0xff51afd7ed558ccdULL;
  hash ^= hash >> 33;
  hash *= 0xc4ceb9fe1a85ec53ULL;
  hash ^= hash >> 33;
  return fmt::format("{:016x}", hash);
}

std::string IdGenerator::Next() {
  uint64_t hi = rng_();
  uint64_t lo = rng_();
  hi = (hi & ~0xF000ULL) | 0x4000ULL;                         // version 4
  lo = (lo & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;  // RFC 4122 variant
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xFFFF,
                     hi & 0xFFFF, lo >> 48, lo & 0xFFFFFFFFFFFFULL);
}

}  // namespace dedupsim
