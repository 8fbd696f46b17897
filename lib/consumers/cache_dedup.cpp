#include "consumers/cache_dedup.h"

#include "consumers/naive.h"

namespace dedupsim {

std::string_view ToString(CacheWrite write) {
  return write == CacheWrite::kSetIfAbsent ? "set-if-absent" : "check-then-set";
}

std::string CacheDedupReserveStock::Key(const OrderPlaced& m) {
  return std::string(kName) + ":" + m.message_id;
}

bool CacheDedupReserveStock::Handle(const OrderPlaced& m) {
  const std::string key = Key(m);
  if (write_ == CacheWrite::kSetIfAbsent) {
    if (!cache_.SetIfAbsent(key)) return false;
  } else if (cache_.Contains(key)) {
    return false;
  }
  db_.RunHook("AfterCacheCheck", after_cache_check);
  AddReserved(db_, m);  // autocommit in the inventory database
  db_.RunHook("AfterStockCommitted", after_stock_committed);
  if (write_ == CacheWrite::kCheckThenSet) cache_.Set(key);
  return true;
}

}  // namespace dedupsim
