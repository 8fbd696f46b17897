// Looks for the message in the Inbox, reserves the stock (committed on its own), then
// records the message. The gap between the two commits is the failure window: a crash at
// AfterStockCommitted leaves the work done and no record, so a redelivery does it again.
#pragma once

#include "clock.h"
#include "hooks.h"
#include "message.h"
#include "schema.h"
#include "sqlite/connection.h"
#include "sqlite/statement.h"

namespace dedupsim {

class CheckThenProcessReserveStock {
 public:
  static constexpr const char* kName = "inventory.reserve-stock";

  CheckThenProcessReserveStock(Connection& db, Clock& clock) : db_(db), clock_(clock) {}

  Hook after_stock_committed;

  // Returns false when the Inbox already held the message (skipped).
  bool Handle(const OrderPlaced& m);

 private:
  Connection& db_;
  Clock& clock_;
};

// Inserts a completed inbox row (ReceivedAt = CompletedAt = now) in the table with this
// key. Shared by consumers that record in one step.
InsertResult InsertCompletedInboxRow(Connection& db, const std::string& message_id,
                                     const std::string& consumer, TimePoint now,
                                     InboxKey key = InboxKey::kMessageIdAndConsumer);
// The same with the timestamp already formatted (ReceivedAt = CompletedAt = stamp): the
// hot path's form, which builds no text and allocates nothing.
InsertResult InsertCompletedInboxRow(Connection& db, std::string_view message_id,
                                     std::string_view consumer, std::string_view stamp,
                                     InboxKey key);
// The INSERT of that row, one SQL text per key shape (so the statement cache finds it
// without building a string).
std::string_view InsertCompletedInboxSql(InboxKey key);
// The same on the statement db.Cached(InsertCompletedInboxSql(key)) returned (a hot path
// keeps it): every text is bound without a copy and must outlive the call.
InsertResult InsertCompletedInboxRow(Statement& insert, std::string_view message_id,
                                     std::string_view consumer, std::string_view stamp);

}  // namespace dedupsim
