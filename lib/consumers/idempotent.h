// The Inbox pattern: in one transaction, claim the key (insert the Inbox row first), do
// the work, commit. A duplicate key means another delivery already did it: Handle returns
// false, which is a success to ack, not an error. A crash before commit rolls back both.
//
// Claiming first matters on SQLite: the INSERT is the statement that takes the write
// lock, so a second copy waits there (through the busy handler) holding nothing, and
// sees the first copy's row once it commits. On PostgreSQL the second copy's INSERT waits
// on the first's uncommitted key alone, then fails with 23505.
#pragma once

#include <optional>

#include "core/clock.h"
#include "core/hooks.h"
#include "core/message.h"
#include "store/store.h"

namespace dedupsim {

class IdempotentReserveStock {
 public:
  static constexpr const char* kName = "inventory.reserve-stock";

  IdempotentReserveStock(Store& store, Clock& clock) : store_(store), clock_(clock) {}

  Hook before_commit;
  TransactionKind begin = TransactionKind::kDeferred;
  // The post's key; the shared-key lesson sets kMessageIdOnly.
  InboxKey inbox_key = InboxKey::kMessageIdAndConsumer;

  // True when this delivery did the work; false when it was a duplicate.
  bool Handle(const OrderPlaced& m);

 private:
  Store& store_;
  Clock& clock_;
};

}  // namespace dedupsim
