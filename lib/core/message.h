// The message the consumers handle, and the ids the producer gives it.
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace dedupsim {

// OrderPlaced, as the Ordering service publishes it: one book line of an order.
struct OrderPlaced {
  std::string message_id;  // made once by the producer; the same on every redelivery
  std::string order_id;
  std::string book_id;
  int64_t quantity = 0;
};

// A fingerprint of the message's content (order, book, quantity; not the message id), as
// 16 hex digits. Two messages with the same id and the same hash carry the
// same content. A teaching stand-in (FNV-1a with a final mix, not collision-resistant):
// a real system would hash the serialized body with SHA-256.
std::string PayloadHash(const OrderPlaced& message);

// Makes random UUID-shaped ids (version 4). Seeded, so a run can be replayed.
class IdGenerator {
 public:
  IdGenerator();                        // seeded from std::random_device
  explicit IdGenerator(uint64_t seed);  // reproducible
  std::string Next();

 private:
  std::mt19937_64 rng_;
};

}  // namespace dedupsim
