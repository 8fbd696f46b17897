// The pitfall of a dedup record kept in a cache while the work goes to the database. The
// two stores cannot share a transaction, so there is always a moment between the two
// writes for a crash to fall into.
//
// kCheckThenSet: Contains, reserve (committed), then Set. A crash at AfterStockCommitted
// leaves the work done and no key: the redelivery reserves again. Two copies at once both
// find the key absent at AfterCacheCheck and both reserve.
// kSetIfAbsent: SetIfAbsent first, then reserve. Of two copies at once, only the one whose
// write landed goes on. (A crash between the two would now lose the work instead: the
// window only changes direction, as in record-first.)
#pragma once

#include <optional>
#include <string_view>

#include "core/clock.h"
#include "core/hooks.h"
#include "core/message.h"
#include "store/store.h"
#include "world/dedup_cache.h"

namespace dedupsim {

enum class CacheWrite { kCheckThenSet, kSetIfAbsent };

std::string_view ToString(CacheWrite write);  // "check-then-set", "set-if-absent"

class CacheDedupReserveStock {
 public:
  static constexpr const char* kName = "inventory.reserve-stock";

  // db: the inventory database; cache: the dedup cache. Both must outlive the consumer.
  CacheDedupReserveStock(Store& db, DedupCache& cache, CacheWrite write)
      : db_(db), cache_(cache), write_(write) {}

  Hook after_cache_check;      // the cache said "absent" (or accepted the claim)
  Hook after_stock_committed;  // the stock update committed; the key not yet set

  // False when the cache already held the key (skipped).
  bool Handle(const OrderPlaced& m);

  // The cache key of a message for this consumer.
  static std::string Key(const OrderPlaced& m);

 private:
  Store& db_;
  DedupCache& cache_;
  CacheWrite write_;
};

}  // namespace dedupsim
