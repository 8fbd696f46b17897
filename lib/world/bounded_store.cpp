#include "world/bounded_store.h"

#include <stdexcept>

namespace dedupsim {

BoundedKeyStore::BoundedKeyStore(size_t capacity) : capacity_(capacity) {
  if (capacity_ < 1) throw std::invalid_argument("a bounded store needs room for a key");
}

BoundedKeyStore::AddResult BoundedKeyStore::Add(const std::string& key) {
  AddResult result;
  if (auto it = index_.find(key); it != index_.end()) {
    order_.splice(order_.begin(), order_, it->second);
    return result;
  }
  if (order_.size() == capacity_) {
    result.evicted = order_.back();
    index_.erase(order_.back());
    order_.pop_back();
    evictions_++;
  }
  order_.push_front(key);
  index_[key] = order_.begin();
  result.added = true;
  return result;
}

}  // namespace dedupsim
