// The inbox consumer that also counts receipts, as MassTransit's InboxState does: the row
// carries ReceiveCount, and a delivery of a key already present increments it (and stamps
// LastReceivedAt) in the same transaction that skips the work. The row then tells
// "received 3 times, processed once" apart from "processed 3 times"; CompletedAt is the
// time the work was consumed.
#pragma once

#include <cstdint>

#include "clock.h"
#include "hooks.h"
#include "message.h"
#include "sqlite/connection.h"

namespace dedupsim {

struct ReceiveReport {
  bool processed = false;     // this delivery did the work
  int64_t receive_count = 0;  // the row's ReceiveCount after this delivery
};

class ReceiveCountingReserveStock {
 public:
  static constexpr const char* kName = "inventory.reserve-stock";

  ReceiveCountingReserveStock(Connection& db, Clock& clock) : db_(db), clock_(clock) {}

  Hook before_commit;

  ReceiveReport Handle(const OrderPlaced& m);

 private:
  Connection& db_;
  Clock& clock_;
};

}  // namespace dedupsim
