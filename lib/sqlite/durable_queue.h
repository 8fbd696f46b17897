// A durable simulated broker kept in SQLite, for the soak: its own tables in the dedupsim
// database, so a delivery that was taken but not acknowledged survives the death of the
// consumer that took it.
//
// Each enqueued entry is delivered under a lease (a visibility timeout): Receive hides it
// until the lease ends and counts the delivery; Ack marks it done, but only with the lease
// it was delivered under (the delivery count is the lease token), so an ack from a
// consumer whose lease expired and went to another is refused, as a real broker refuses a
// lost lock. An entry not acked before its lease ends is delivered again.
//
// Every broker operation is one statement in its own transaction, never joined with the
// consumer's work: the broker stands for another system. Times are steady-clock
// microseconds, comparable across processes on one machine.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/message.h"
#include "sqlite/connection.h"

namespace dedupsim {

// Creates the broker's table if missing and empties it.
void ResetBroker(Connection& connection);

// Enqueues every message in order, in one transaction, all visible at once.
void Enqueue(Connection& connection, const std::vector<OrderPlaced>& messages);

// Not named Delivery: lib/world/broker.h has a dedupsim::Delivery of another shape, and two
// classes of one name break the one-definition rule (a test built at -O0 crashed on it).
struct LeasedDelivery {
  int64_t seq = 0;             // the broker entry
  int64_t delivery_count = 0;  // 1 on the first delivery; the lease token
  OrderPlaced message;
};

// One consumer's handle on the broker: the lease design above, whatever database keeps
// the table. Each backend writes it in its own dialect: DurableBroker here (SQLite: one
// UPDATE ... WHERE Seq = (SELECT ...) under the single writer lock), PgDurableBroker in
// soak/pg_broker.h (PostgreSQL: FOR UPDATE SKIP LOCKED, the server's clock).
class BrokerQueue {
 public:
  virtual ~BrokerQueue() = default;
  // Leases the oldest entry that is neither acked nor leased; nullopt when none is visible
  // now. Throws the backend's StoreError.
  virtual std::optional<LeasedDelivery> Receive() = 0;
  // Acks the delivery, recording whether the consumer did the work or skipped it. False
  // when the lease was lost (the entry went to another delivery or is acked already).
  virtual bool Ack(const LeasedDelivery& delivery, bool processed) = 0;
  // True when every entry is acked.
  virtual bool AllAcked() = 0;
};

// The SQLite dialect. Uses the connection it is given (its own, opened after fork); one
// thread at a time.
class DurableBroker final : public BrokerQueue {
 public:
  DurableBroker(Connection& connection, std::chrono::milliseconds lease, int64_t consumer);

  std::optional<LeasedDelivery> Receive() override;
  bool Ack(const LeasedDelivery& delivery, bool processed) override;
  bool AllAcked() override;

 private:
  Connection& db_;
  std::chrono::milliseconds lease_;
  int64_t consumer_;
};

// What the broker's table says after a run.
struct BrokerCounts {
  int64_t entries = 0;  // enqueued
  int64_t acked = 0;
  int64_t deliveries = 0;       // sum of delivery counts
  int64_t redeliveries = 0;     // deliveries beyond the first, summed over entries
  int64_t acked_processed = 0;  // acked by a consumer that did the work
  int64_t acked_skipped = 0;    // acked by a consumer that skipped a duplicate
};

BrokerCounts ReadBrokerCounts(Connection& connection);
// The OrderIds no entry of which was acked (none when every entry was).
std::unordered_set<std::string> UnackedOrders(Connection& connection);

}  // namespace dedupsim
