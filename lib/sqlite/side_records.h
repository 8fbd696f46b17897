// SQLite's side records (store/side_store.h SideRecords): the dedup cache's and the email
// provider's tables on one SQLite connection to a side store, with the statements the
// lessons trace ("INSERT CacheKeys", "INSERT SentEmails", ...). It holds the connection it
// is given (the explorer's second file, which the explorer owns) or one of its own (a
// connection a SideStore opened, SqliteSideStore::Open). One thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "sqlite/connection.h"
#include "store/side_store.h"

namespace dedupsim {

// The side stores' tables, the one definition of each: made once (CREATE TABLE IF NOT
// EXISTS) in a new side store (side_store.h), in the explorer's second file and in a
// checker's scratch (UntrustedSqlChecker::NewScratch); null for kNone.
const char* SideStoreTables(SideStoreKind kind);
// The statements that empty them (before each of the explorer's schedules); null for kNone.
const char* SideStoreReset(SideStoreKind kind);

class SqliteSideRecords final : public SideRecords {
 public:
  // connection: must outlive this object.
  explicit SqliteSideRecords(Connection& connection) : connection_(&connection) {}
  // Owns connection.
  explicit SqliteSideRecords(Connection&& connection)
      : owned_(std::move(connection)), connection_(&*owned_) {}
  SqliteSideRecords(const SqliteSideRecords&) = delete;
  SqliteSideRecords& operator=(const SqliteSideRecords&) = delete;

  void SetTraceRole(std::string actor, std::string target) override;
  void SetDelivery(DeliveryRef delivery) override;

  bool CacheContains(const std::string& key) override;
  void CacheSet(const std::string& key, Clock& clock) override;
  bool CacheSetIfAbsent(const std::string& key, Clock& clock) override;
  int64_t CacheCount() override;

  bool ProviderSend(const std::string& idempotency_key, const std::string& text,
                    Clock& clock) override;
  std::optional<std::string> ProviderFind(const std::string& idempotency_key) override;
  int64_t ProviderSentCount() override;
  int64_t ProviderRequestCount() override;

  // A file's statements on its second store, in the sandbox (sqlite/sandbox.h).
  UntrustedSql& untrusted() override;

  Connection& connection() { return *connection_; }

 private:
  std::optional<Connection> owned_;
  Connection* connection_;
  std::shared_ptr<UntrustedSql> untrusted_;  // made on first use
};

// The SQLite connection under records (a SqliteSideRecords: a side store SQLite made), for
// code that runs a delivery on SQLite connections (the explorer's strategies, a scenario
// file's consumers). Throws std::logic_error for records of another kind.
Connection& SqliteConnectionOf(SideRecords& records);

}  // namespace dedupsim
