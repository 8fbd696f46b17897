#include "consumers/outbox.h"

#include <vector>

#include "consumers/check_then_process.h"
#include "consumers/naive.h"
#include "schema.h"
#include "sqlite/statement.h"
#include "sqlite/transaction.h"

namespace dedupsim {

StockReserved StockReservedFor(const OrderPlaced& m) {
  return StockReserved{m.message_id + "/StockReserved", m.order_id, m.book_id, m.quantity};
}

namespace {

void InsertOutboxRow(Connection& db, const OrderPlaced& source, const StockReserved& out,
                     TimePoint now) {
  db.Cached(
        "INSERT INTO Outbox (MessageId, SourceMessageId, Type, OrderId, BookId, Quantity, "
        "CreatedAt, DispatchedAt) VALUES (?1, ?2, 'StockReserved', ?3, ?4, ?5, ?6, NULL)")
      .Bind(1, out.message_id)
      .Bind(2, source.message_id)
      .Bind(3, out.order_id)
      .Bind(4, out.book_id)
      .Bind(5, out.quantity)
      .Bind(6, FormatTimestamp(now))
      .Execute();
}

}  // namespace

bool OutboxReserveStock::Handle(const OrderPlaced& m) {
  Transaction tx(db_);
  const TimePoint now = clock_.Now();
  if (InsertCompletedInboxRow(db_, m.message_id, kName, now) == InsertResult::kDuplicateKey) {
    tx.Rollback();
    return false;
  }
  AddReserved(db_, m);
  InsertOutboxRow(db_, m, StockReservedFor(m), now);
  RunHook(db_, "BeforeCommit", before_commit);
  tx.Commit();
  return true;
}

int64_t OutboxDispatcher::DispatchPending() {
  std::vector<StockReserved> pending;
  {
    Statement query = db_.Prepare(
        "SELECT MessageId, OrderId, BookId, Quantity FROM Outbox WHERE DispatchedAt IS NULL "
        "ORDER BY CreatedAt, MessageId");
    while (query.Step()) {
      pending.push_back(StockReserved{query.ColumnText(0), query.ColumnText(1), query.ColumnText(2),
                                      query.ColumnInt(3)});
    }
  }
  int64_t sent = 0;
  for (const StockReserved& message : pending) {
    downstream_.Send(message);
    sent++;
    db_.Note("dispatch", "send " + message.message_id, "sent");
    RunHook(db_, "AfterDispatch", after_dispatch);
    db_.Cached("UPDATE Outbox SET DispatchedAt = ?1 WHERE MessageId = ?2")
        .Bind(1, FormatTimestamp(clock_.Now()))
        .Bind(2, message.message_id)
        .Execute();
  }
  return sent;
}

bool DispatchBeforeCommitReserveStock::Handle(const OrderPlaced& m) {
  Transaction tx(db_);
  if (InsertCompletedInboxRow(db_, m.message_id, kName, clock_.Now()) ==
      InsertResult::kDuplicateKey) {
    tx.Rollback();
    return false;
  }
  AddReserved(db_, m);
  const StockReserved out = StockReservedFor(m);
  downstream_.Send(out);  // out of the building before the transaction has decided
  db_.Note("dispatch", "send " + out.message_id, "sent");
  RunHook(db_, "BeforeCommit", before_commit);
  tx.Commit();
  return true;
}

bool PrepareShipment::Handle(const StockReserved& m) {
  Transaction tx(db_);
  const TimePoint now = clock_.Now();
  if (InsertCompletedInboxRow(db_, m.message_id, kName, now) == InsertResult::kDuplicateKey) {
    tx.Rollback();
    return false;
  }
  db_.Cached("INSERT INTO ShipmentRequests (OrderId, RequestedAt) VALUES (?1, ?2)")
      .Bind(1, m.order_id)
      .Bind(2, FormatTimestamp(now))
      .Execute();
  tx.Commit();
  return true;
}

int64_t CountShipmentRequests(Connection& db, const std::string& order_id) {
  Statement query = db.Prepare("SELECT count(*) FROM ShipmentRequests WHERE OrderId = ?1");
  query.Bind(1, order_id);
  query.Step();
  return query.ColumnInt(0);
}

int64_t CountOutboxRows(Connection& db, bool dispatched_only) {
  Statement query =
      db.Prepare(dispatched_only ? "SELECT count(*) FROM Outbox WHERE DispatchedAt IS NOT NULL"
                                 : "SELECT count(*) FROM Outbox");
  query.Step();
  return query.ColumnInt(0);
}

}  // namespace dedupsim
