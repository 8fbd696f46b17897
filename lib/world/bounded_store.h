// A dedup store with room for a fixed number of keys, kept in memory and evicting the
// least recently used key when full, as Apache Camel's memory idempotent repository does.
// Not thread-safe: one consumer uses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>

namespace dedupsim {

class BoundedKeyStore {
 public:
  // capacity: at least 1.
  explicit BoundedKeyStore(size_t capacity);

  struct AddResult {
    bool added = false;                  // false: the key was there (now most recent)
    std::optional<std::string> evicted;  // the key that made room, if one had to go
  };
  // Check-and-add in one call.
  AddResult Add(const std::string& key);

  size_t size() const { return order_.size(); }
  size_t capacity() const { return capacity_; }
  int64_t evictions() const { return evictions_; }  // keys pushed out since made

 private:
  size_t capacity_;
  int64_t evictions_ = 0;
  std::list<std::string> order_;  // most recent first
  std::unordered_map<std::string, std::list<std::string>::iterator> index_;
};

}  // namespace dedupsim
