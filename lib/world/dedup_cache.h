// A dedup cache: a key-value store of the message keys seen, kept outside the inventory
// database. It stands in for Redis or Memcached on a side store (store/side_store.h); what
// matters for the lessons is only that its writes can never join the inventory database's
// transaction.
//
// It offers the two ways a cache is used as a dedup record: Contains then Set (a look,
// then a write: two steps another instance can slip between), and SetIfAbsent (one atomic
// step, Redis's SET NX). Each call is one autocommitted step on the given records.
#pragma once

#include <cstdint>
#include <string>

#include "core/clock.h"
#include "store/side_store.h"

namespace dedupsim {

class DedupCache {
 public:
  // records: a connection to a cache (SideStoreKind::kCache); must outlive this object.
  DedupCache(SideRecords& records, Clock& clock) : records_(records), clock_(clock) {}

  bool Contains(const std::string& key) { return records_.CacheContains(key); }
  // Writes the key whether or not it was there.
  void Set(const std::string& key) { records_.CacheSet(key, clock_); }
  // Writes the key only if it was absent; true when this call wrote it.
  bool SetIfAbsent(const std::string& key) { return records_.CacheSetIfAbsent(key, clock_); }
  int64_t Count() { return records_.CacheCount(); }

 private:
  SideRecords& records_;
  Clock& clock_;
};

}  // namespace dedupsim
