// The soak's durable queue (store/durable_queue.h) in PostgreSQL's dialect: the same table, the
// same lease design (a visibility timeout, the delivery count as the lease token, an ack
// refused once the lease is lost), kept in dedupsim's marked schema. Receive takes the
// oldest visible entry with FOR UPDATE SKIP LOCKED, so consumers on any number of
// connections and machines lease different entries without waiting on each other. Lease
// times are the server's clock (clock_timestamp()), so consumers on several machines agree.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/message.h"
#include "postgres/connection.h"
#include "store/durable_queue.h"

namespace dedupsim {

class PgDatabase;

// Creates BrokerMessages in db's schema when missing (marked as dedupsim's) and empties it.
void ResetBroker(const PgDatabase& db);

// Enqueues every message in order, in one statement, all visible at once.
void Enqueue(const PgDatabase& db, const std::vector<OrderPlaced>& messages);

class PgDurableBroker final : public BrokerQueue {
 public:
  // Uses the connection it is given (its own, opened after fork); one thread at a time.
  PgDurableBroker(PgConnection& connection, std::chrono::milliseconds lease, int64_t consumer);

  std::optional<LeasedDelivery> Receive() override;
  bool Ack(const LeasedDelivery& delivery, bool processed) override;
  bool AllAcked() override;

 private:
  PgConnection& db_;
  std::string lease_ms_;
  std::string consumer_;
};

BrokerCounts ReadBrokerCounts(const PgDatabase& db);
// The OrderIds no entry of which was acked (none when every entry was).
std::unordered_set<std::string> UnackedOrders(const PgDatabase& db);

// Consumers on several machines (soak --role): one row that says whether a run is going.
// The supervisor starts a run (Done false) once the broker is filled, and ends it (Done
// true) once every entry is acked; a consumer works from the first time it sees a run
// going until it sees it done. Creates the broker and control tables when missing.
void EnsureBrokerTables(const PgDatabase& db);
void StartRun(const PgDatabase& db);
void EndRun(const PgDatabase& db);
// nullopt: no run was ever started in this schema; else whether the last one is done.
std::optional<bool> RunDone(PgConnection& c);

// The run shared by consumers on several machines (store/durable_queue.h) in db's schema:
// the functions above, and the queue's counts read on a connection of its own. db must
// outlive it.
class PgSharedRun final : public SharedRun {
 public:
  explicit PgSharedRun(const PgDatabase& db);
  void EnsureTables() override;
  void Start() override;
  void End() override;
  std::optional<bool> Done() override { return RunDone(connection_); }
  Progress ReadProgress() override;
  int64_t ConsumersSeen() override;

 private:
  const PgDatabase& db_;
  PgConnection connection_;
};

}  // namespace dedupsim
