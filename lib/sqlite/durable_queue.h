// The soak's durable queue (store/durable_queue.h) in SQLite's dialect: its table in the
// dedupsim database, one UPDATE ... WHERE Seq = (SELECT ...) under the single writer lock
// to lease an entry. Times are steady-clock microseconds, comparable across processes on
// one machine.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/message.h"
#include "sqlite/connection.h"
#include "store/durable_queue.h"

namespace dedupsim {

// Creates the broker's table if missing and empties it.
void ResetBroker(Connection& connection);

// Enqueues every message in order, in one transaction, all visible at once.
void Enqueue(Connection& connection, const std::vector<OrderPlaced>& messages);

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

BrokerCounts ReadBrokerCounts(Connection& connection);
// The OrderIds no entry of which was acked (none when every entry was).
std::unordered_set<std::string> UnackedOrders(Connection& connection);

}  // namespace dedupsim
