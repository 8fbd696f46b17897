// SQLite's side records (store/side_store.h SideRecords): the dedup cache's and the email
// provider's tables on one SQLite connection to a side store, with the statements the
// lessons trace ("INSERT CacheKeys", "INSERT SentEmails", ...). It holds the connection it
// is given (the explorer's second file, which the explorer owns) or one of its own (a
// connection a SideStore opened, SqliteSideStore::Open). One thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "sqlite/connection.h"
#include "store/side_store.h"

namespace dedupsim {

// The side stores' tables, as SQLite creates them in a new side store.
inline constexpr const char* kDedupCacheTables =
    "CREATE TABLE CacheKeys (Key TEXT NOT NULL PRIMARY KEY, SetAt TEXT NOT NULL) WITHOUT ROWID";
inline constexpr const char* kEmailProviderTables = R"sql(
    CREATE TABLE SentEmails (
      IdempotencyKey TEXT NOT NULL PRIMARY KEY,
      Text           TEXT NOT NULL,
      SentAt         TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE ProviderRequests (
      Id             INTEGER PRIMARY KEY,
      IdempotencyKey TEXT NOT NULL,
      Result         TEXT NOT NULL,
      At             TEXT NOT NULL
    );
  )sql";

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

  Connection& connection() { return *connection_; }

 private:
  std::optional<Connection> owned_;
  Connection* connection_;
};

// The SQLite connection under records (a SqliteSideRecords: a side store SQLite made), for
// code that runs a delivery on SQLite connections (the explorer's strategies, a scenario
// file's consumers). Throws std::logic_error for records of another kind.
Connection& SqliteConnectionOf(SideRecords& records);

}  // namespace dedupsim
