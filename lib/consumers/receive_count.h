// The inbox consumer that also counts receipts, as MassTransit's InboxState does: the row
// carries ReceiveCount, and a delivery of a key already present increments it (and stamps
// LastReceivedAt) in the same transaction that skips the work. The row then tells
// "received 3 times, processed once" apart from "processed 3 times"; CompletedAt is the
// time the work was consumed.
#pragma once

#include <cstdint>
#include <optional>

#include "core/clock.h"
#include "core/hooks.h"
#include "core/message.h"
#include "store/store.h"

namespace dedupsim {

struct ReceiveReport {
  bool processed = false;     // this delivery did the work
  int64_t receive_count = 0;  // the row's ReceiveCount after this delivery
};

class ReceiveCountingReserveStock {
 public:
  static constexpr const char* kName = "inventory.reserve-stock";

  ReceiveCountingReserveStock(Store& store, Clock& clock) : store_(store), clock_(clock) {}

  Hook before_commit;

  ReceiveReport Handle(const OrderPlaced& m);

 private:
  Store& store_;
  Clock& clock_;
};

}  // namespace dedupsim
