// A dedup cache: a key-value store of the message keys seen, kept outside the inventory
// database. Here it is a SideStore (a second SQLite file) standing in for Redis or
// Memcached; what matters for the lessons is only that its writes can never join the
// inventory database's transaction.
//
// It offers the two ways a cache is used as a dedup record: Contains then Set (a look,
// then a write: two steps another instance can slip between), and SetIfAbsent (one atomic
// step, Redis's SET NX). Each call is one autocommitted statement on the given connection.
#pragma once

#include <cstdint>
#include <string>

#include "core/clock.h"
#include "sqlite/connection.h"
#include "sqlite/side_store.h"

namespace dedupsim {

// Creates the cache file in home (beside the run's database, or a server run's folder for
// side stores). The returned store removes it when destroyed.
SideStore CreateDedupCache(const SideStoreHome& home);

class DedupCache {
 public:
  // connection: to the cache's SideStore; must outlive this object.
  DedupCache(Connection& connection, Clock& clock) : connection_(connection), clock_(clock) {}

  bool Contains(const std::string& key);
  // Writes the key whether or not it was there.
  void Set(const std::string& key);
  // Writes the key only if it was absent; true when this call wrote it.
  bool SetIfAbsent(const std::string& key);
  int64_t Count();

 private:
  Connection& connection_;
  Clock& clock_;
};

}  // namespace dedupsim
