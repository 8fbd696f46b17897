// The soak's durable queue: a simulated broker kept in the workload's own database (its own
// table, WorkloadDatabase::FillQueue, store/workload_database.h), so a delivery that was
// taken but not acknowledged survives the death of the consumer that took it. Each backend
// writes it in its own dialect (sqlite/durable_queue.h: one UPDATE ... WHERE Seq = (SELECT
// ...) under the single writer lock; postgres/durable_queue.h: FOR UPDATE SKIP LOCKED, the
// server's clock); the soak's NATS queue is another BrokerQueue (soak/nats_queue.h).
//
// Each enqueued entry is delivered under a lease (a visibility timeout): Receive hides it
// until the lease ends and counts the delivery; Ack marks it done, but only with the lease
// it was delivered under (the delivery count is the lease token), so an ack from a
// consumer whose lease expired and went to another is refused, as a real broker refuses a
// lost lock. An entry not acked before its lease ends is delivered again.
//
// Every queue operation is one statement in its own transaction, never joined with the
// consumer's work: the queue stands for another system.
#pragma once

#include <cstdint>
#include <optional>

#include "core/message.h"

namespace dedupsim {

// Not named Delivery: world/broker/broker.h has a dedupsim::Delivery of another shape, and
// two classes of one name break the one-definition rule (a test built at -O0 crashed on it).
struct LeasedDelivery {
  int64_t seq = 0;             // the queue's entry
  int64_t delivery_count = 0;  // 1 on the first delivery; the lease token
  OrderPlaced message;
};

// One consumer's handle on the queue, on a connection of its own (opened after fork); one
// thread at a time.
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

// What the queue's table says after a run.
struct BrokerCounts {
  int64_t entries = 0;  // enqueued
  int64_t acked = 0;
  int64_t deliveries = 0;       // sum of delivery counts
  int64_t redeliveries = 0;     // deliveries beyond the first, summed over entries
  int64_t acked_processed = 0;  // acked by a consumer that did the work
  int64_t acked_skipped = 0;    // acked by a consumer that skipped a duplicate
};

// Consumers on several machines sharing one durable queue (soak --role): the database's one
// row that says whether a run is going, and what the queue's table says while it goes. The
// supervisor starts a run once the queue is filled and ends it once every entry is acked; a
// consumer works from the first time it sees a run going until it sees it done. Made by
// Databases::OpenSharedRun (store/databases.h), on a connection of its own; one thread at a
// time. Throws the backend's StoreError.
class SharedRun {
 public:
  virtual ~SharedRun() = default;
  // Creates the queue's and the run's tables when missing.
  virtual void EnsureTables() = 0;
  // A run going (done false), or the last one done.
  virtual void Start() = 0;
  virtual void End() = 0;
  // nullopt: no run was ever started in this database; else whether the last one is done.
  virtual std::optional<bool> Done() = 0;
  // The queue's entries and how many of them are acked, read now.
  struct Progress {
    int64_t acked = 0;
    int64_t entries = 0;
  };
  virtual Progress ReadProgress() = 0;
  // How many consumers leased an entry of the queue (the distinct lease owners).
  virtual int64_t ConsumersSeen() = 0;
};

}  // namespace dedupsim
