// The Inbox pattern: in one transaction, claim the key (insert the Inbox row first), do
// the work, commit. A duplicate key means another delivery already did it: Handle returns
// false, which is a success to ack, not an error. A crash before commit rolls back both.
//
// Claiming first matters on SQLite: the INSERT is the statement that takes the write
// lock, so a second copy waits there (through the busy handler) holding nothing, and
// sees the first copy's row once it commits.
#pragma once

#include "clock.h"
#include "hooks.h"
#include "message.h"
#include "schema.h"
#include "sqlite/connection.h"
#include "sqlite/transaction.h"
#include "timestamp.h"

namespace dedupsim {

class IdempotentReserveStock {
 public:
  static constexpr const char* kName = "inventory.reserve-stock";

  IdempotentReserveStock(Connection& db, Clock& clock) : db_(db), clock_(clock) {}

  Hook before_commit;
  TransactionKind begin = TransactionKind::kDeferred;
  // The post's key; the shared-key lesson sets kMessageIdOnly.
  InboxKey inbox_key = InboxKey::kMessageIdAndConsumer;

  // True when this delivery did the work; false when it was a duplicate.
  bool Handle(const OrderPlaced& m);

 private:
  // The INSERT for inbox_key and the UPDATE, found in the connection's statement cache on
  // the first delivery and kept: the connection owns them, and they stay valid while it is
  // the same open connection (checked on every delivery).
  struct HotStatements {
    sqlite3* owner = nullptr;
    InboxKey key = InboxKey::kMessageIdAndConsumer;
    Statement* insert = nullptr;
    Statement* update = nullptr;
  };
  HotStatements& Statements();

  Connection& db_;
  Clock& clock_;
  TimestampFormatter stamp_;  // ReceivedAt and CompletedAt, without allocating
  HotStatements hot_;
};

}  // namespace dedupsim
