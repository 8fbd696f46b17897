#include "consumers/outbox.h"

#include <vector>

#include "consumers/naive.h"
#include "store/lesson_tables.h"

namespace dedupsim {

StockReserved StockReservedFor(const OrderPlaced& m) {
  return StockReserved{m.message_id + "/StockReserved", m.order_id, m.book_id, m.quantity};
}

namespace {

// The inbox's claim of the post's key, as every consumer here makes it.
InsertResult Claim(Store& db, const std::string& message_id, const char* consumer, TimePoint now) {
  return db.ClaimCompleted(InboxKey::kMessageIdAndConsumer, message_id, consumer, now);
}

}  // namespace

bool OutboxReserveStock::Handle(const OrderPlaced& m) {
  ScopedTransaction tx(db_);
  const TimePoint now = clock_.Now();
  if (Claim(db_, m.message_id, kName, now) == InsertResult::kDuplicateKey) {
    tx.Rollback();
    return false;
  }
  AddReserved(db_, m);
  db_.tables().AddOutboxMessage(m, StockReservedFor(m), now);
  db_.RunHook("BeforeCommit", before_commit);
  tx.Commit();
  return true;
}

int64_t OutboxDispatcher::DispatchPending() {
  const std::vector<StockReserved> pending = db_.tables().PendingOutboxMessages();
  int64_t sent = 0;
  for (const StockReserved& message : pending) {
    TraceEvent dispatcher;  // the send is the dispatcher's step
    db_.StampTrace(dispatcher);
    downstream_.SendAs(message, dispatcher);
    sent++;
    db_.RunHook("AfterDispatch", after_dispatch);
    db_.tables().MarkDispatched(message.message_id, clock_.Now());
  }
  return sent;
}

bool DispatchBeforeCommitReserveStock::Handle(const OrderPlaced& m) {
  ScopedTransaction tx(db_);
  if (Claim(db_, m.message_id, kName, clock_.Now()) == InsertResult::kDuplicateKey) {
    tx.Rollback();
    return false;
  }
  AddReserved(db_, m);
  const StockReserved out = StockReservedFor(m);
  TraceEvent consumer;  // the consumer's own send, from inside its transaction
  db_.StampTrace(consumer);
  downstream_.SendAs(out, consumer);  // out of the building before the transaction has decided
  db_.RunHook("BeforeCommit", before_commit);
  tx.Commit();
  return true;
}

bool PrepareShipment::Handle(const StockReserved& m) {
  ScopedTransaction tx(db_);
  const TimePoint now = clock_.Now();
  if (Claim(db_, m.message_id, kName, now) == InsertResult::kDuplicateKey) {
    tx.Rollback();
    return false;
  }
  db_.tables().AddShipmentRequest(m.order_id, now);
  tx.Commit();
  return true;
}

}  // namespace dedupsim
