// The bench's and the soak's database on PostgreSQL (store/workload_database.h): a schema
// of a PgDatabase, emptied and stocked with the workload's books and read back, and
// measured connections to it: a PgStore (read committed) whose transactions a counting
// store sees begin and end, or the raw baseline, the inbox's SQL written by hand on libpq.
// Each connection sets the session's synchronous_commit and reads it back from the server,
// and counts the statements it sent (one round trip each).
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <optional>

#include "postgres/cluster.h"
#include "postgres/store.h"
#include "store/databases.h"
#include "store/workload_database.h"

namespace dedupsim {

class PgDatabase;

class PgWorkloadDatabase final : public WorkloadDatabase {
 public:
  // db must outlive this object. Throws nothing; a connection opened later throws
  // DatabaseError (PgError) when the server cannot be reached.
  PgWorkloadDatabase(const PgDatabase& db, bool synchronous_commit)
      : db_(db), synchronous_commit_(synchronous_commit) {}

  // Empties Inbox, InboxByMessageId, StockReservations and StockItems of db's schema (all
  // dedupsim's own, checked when db was opened), stocks the books, then ANALYZE.
  void StockBooks(const std::vector<std::string>& books) const override;
  std::unordered_map<std::string, int64_t> ReadReserved() const override;
  std::unique_ptr<MeasuredSession> OpenSession() const override;
  std::unique_ptr<RawInbox> OpenRawInbox() const override;
  void FillQueue(const std::vector<OrderPlaced>& messages) const override;
  // Each queue call is one statement in its own transaction: count_open hears nothing.
  std::unique_ptr<BrokerQueue> OpenQueue(
      std::chrono::milliseconds lease, int64_t consumer,
      const std::function<void(bool open)>& count_open) const override;
  BrokerCounts ReadQueueCounts() const override;
  std::unordered_set<std::string> UnackedOrders() const override;
  // PostgreSQL's errors name the server or schema themselves: rethrown as they are.
  [[noreturn]] void Rethrow(const DatabaseError& e) const override;

 private:
  const PgDatabase& db_;
  bool synchronous_commit_;
};

// The Databases of PostgreSQL (store/databases.h): dedupsim's schema on a server, a
// throwaway cluster started for it (stopped and removed with this object) when dsn is
// empty. Each CreateWorkload is a PgWorkloadDatabase on the schema.
class PgDatabases final : public Databases {
 public:
  // Starts the cluster (dsn empty), then opens the schema, creating it where missing.
  // Throws DatabaseError: a server that does not start or answer, a schema not dedupsim's.
  PgDatabases(const std::string& dsn, const std::string& schema);
  std::string_view backend() const override { return "postgres"; }
  std::unique_ptr<WorkloadDatabase> CreateWorkload(const WorkloadSettings& settings) const override;
  // postgres/durable_queue.h's PgSharedRun on the schema.
  std::unique_ptr<SharedRun> OpenSharedRun() const override;
  const PgDatabase& database() const { return *db_; }

 private:
  std::optional<ThrowawayCluster> cluster_;  // declared first: stopped after db_ goes
  std::optional<PgDatabase> db_;
};

// A text[] literal of the values, for one statement that takes many rows (unnest($1)).
std::string PgTextArray(const std::vector<std::string>& values);

}  // namespace dedupsim
