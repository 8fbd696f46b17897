// The side stores: stores outside the service's database that stand for another system (the
// dedup cache for Redis or Memcached, the email provider's records), so that their writes
// can never join a transaction of the service's database: the point of the lessons that
// use one. Interfaces only. Where a side store lives is its implementation's fact (lib/sqlite/
// side_store.h: a SQLite file of its own, on either backend of the service's database).
//
// - SideStores: where a run's side stores are made. One thread at a time.
// - SideStore: one side store made for a run, removed with what it holds when destroyed in
//   the process that made it (a forked child's copy never removes it).
// - SideRecords: one connection to a side store and its tables, used by one thread at a
//   time. Each call is one autocommitted step (a provider's send: one transaction of its
//   two records), traced like a statement of a Session. Failures throw StoreError or
//   DatabaseError (store/error.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "trace/trace.h"

namespace dedupsim {

class TablesReader;
class UntrustedSql;

// Which side store: a consumer keeps at most one apart from the service's database.
enum class SideStoreKind {
  kNone,
  kCache,          // the dedup cache (CacheKeys): cache-check-then-set, cache-set-if-absent
  kEmailProvider,  // the provider that honours an idempotency key (SentEmails, ...)
};

class SideRecords {
 public:
  virtual ~SideRecords() = default;

  // From now on, these steps are traced as `actor` (trace.h kActor*) talking to `target`
  // ("cache", "email provider"), and work for `delivery`, as Session's do.
  virtual void SetTraceRole(std::string actor, std::string target) = 0;
  virtual void SetDelivery(DeliveryRef delivery) = 0;

  // The dedup cache's keys (a kCache store), each stamped with clock's time when written.
  virtual bool CacheContains(const std::string& key) = 0;
  // Writes the key whether or not it was there.
  virtual void CacheSet(const std::string& key, Clock& clock) = 0;
  // Writes the key only if it was absent (Redis's SET NX); true when this call wrote it.
  virtual bool CacheSetIfAbsent(const std::string& key, Clock& clock) = 0;
  virtual int64_t CacheCount() = 0;

  // The email provider's records (a kEmailProvider store). A send is logged as a request
  // either way and as an email when the key is new, in one transaction; true: sent.
  virtual bool ProviderSend(const std::string& idempotency_key, const std::string& text,
                            Clock& clock) = 0;
  // When the key was sent, if it was.
  virtual std::optional<std::string> ProviderFind(const std::string& idempotency_key) = 0;
  virtual int64_t ProviderSentCount() = 0;     // emails that went out
  virtual int64_t ProviderRequestCount() = 0;  // sends asked for, duplicates included

  // Running SQL that dedupsim did not write (a consumer file's steps on its second store,
  // store/untrusted_sql.h) on this connection; throws DatabaseError where none runs. Lives
  // as long as the records.
  virtual UntrustedSql& untrusted();
};

class SideStore {
 public:
  virtual ~SideStore() = default;
  // A new connection to the store, its steps traced under `instance` as the consumer's
  // (SetTraceRole changes whose), or not traced when recorder is null. Safe in a child
  // after fork.
  virtual std::unique_ptr<SideRecords> Open(Recorder* recorder = nullptr,
                                            const std::string& instance = "") const = 0;
};

class SideStores {
 public:
  virtual ~SideStores() = default;
  // A new, empty side store of kind (not kNone) for the run. Throws DatabaseError when it
  // cannot be made (something not of dedupsim's where it would go is left untouched).
  virtual std::unique_ptr<SideStore> Create(SideStoreKind kind) = 0;
  // A reader of every table of the run's side stores (store/tables_reader.h: the cache's,
  // then the provider's, each read once it exists), for the step-through page; null while
  // the run has made no place for them (and asking makes none).
  virtual std::unique_ptr<TablesReader> OpenTablesReader() const = 0;
};

}  // namespace dedupsim
