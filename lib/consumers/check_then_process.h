// Looks for the message in the Inbox, reserves the stock (committed on its own), then
// records the message. The gap between the two commits is the failure window: a crash at
// AfterStockCommitted leaves the work done and no record, so a redelivery does it again.
#pragma once

#include <optional>

#include "core/clock.h"
#include "core/hooks.h"
#include "core/message.h"
#include "sqlite/schema.h"
#include "sqlite/store.h"
#include "store/store.h"

namespace dedupsim {

class CheckThenProcessReserveStock {
 public:
  static constexpr const char* kName = "inventory.reserve-stock";

  CheckThenProcessReserveStock(Store& store, Clock& clock) : store_(store), clock_(clock) {}
  // On SQLite: a store over db, which must outlive the consumer.
  CheckThenProcessReserveStock(Connection& db, Clock& clock)
      : own_(std::in_place, db), store_(*own_), clock_(clock) {}

  Hook after_stock_committed;

  // Returns false when the Inbox already held the message (skipped).
  bool Handle(const OrderPlaced& m);

 private:
  std::optional<SqliteStore> own_;
  Store& store_;
  Clock& clock_;
};

// Inserts a completed inbox row (ReceivedAt = CompletedAt = now) in the table with this
// key. Shared by consumers that record in one step.
InsertResult InsertCompletedInboxRow(Connection& db, const std::string& message_id,
                                     const std::string& consumer, TimePoint now,
                                     InboxKey key = InboxKey::kMessageIdAndConsumer);

}  // namespace dedupsim
