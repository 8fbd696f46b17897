#include "world/dedup_cache.h"

#include "sqlite/statement.h"

namespace dedupsim {

SideStore CreateDedupCache(const SideStoreHome& home) {
  return SideStore::CreateIn(
      home, kDedupCacheSuffix,
      "CREATE TABLE CacheKeys (Key TEXT NOT NULL PRIMARY KEY, SetAt TEXT NOT NULL) WITHOUT ROWID");
}

bool DedupCache::Contains(const std::string& key) {
  Statement& query = connection_.Cached("SELECT 1 FROM CacheKeys WHERE Key = ?1");
  query.Bind(1, key);
  bool found = query.Step();
  query.Reset();
  return found;
}

void DedupCache::Set(const std::string& key) {
  connection_.Cached("INSERT OR REPLACE INTO CacheKeys (Key, SetAt) VALUES (?1, ?2)")
      .Bind(1, key)
      .Bind(2, FormatTimestamp(clock_.Now()))
      .Execute();
}

bool DedupCache::SetIfAbsent(const std::string& key) {
  connection_.Cached("INSERT OR IGNORE INTO CacheKeys (Key, SetAt) VALUES (?1, ?2)")
      .Bind(1, key)
      .Bind(2, FormatTimestamp(clock_.Now()))
      .Execute();
  return connection_.Changes() == 1;
}

int64_t DedupCache::Count() {
  Statement query = connection_.Prepare("SELECT count(*) FROM CacheKeys");
  query.Step();
  return query.ColumnInt(0);
}

}  // namespace dedupsim
