#include "sqlite/durable_queue.h"

#include "sqlite/statement.h"
#include "sqlite/transaction.h"

namespace dedupsim {

namespace {

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void ResetBroker(Connection& connection) {
  connection.ExecScript(R"sql(
    CREATE TABLE IF NOT EXISTS BrokerMessages (
      Seq           INTEGER PRIMARY KEY,  -- enqueue order
      MessageId     TEXT    NOT NULL,
      OrderId       TEXT    NOT NULL,
      BookId        TEXT    NOT NULL,
      Quantity      INTEGER NOT NULL,
      VisibleAtUs   INTEGER NOT NULL DEFAULT 0,  -- hidden until then: the lease
      LeaseOwner    INTEGER,                     -- the consumer holding the last lease
      DeliveryCount INTEGER NOT NULL DEFAULT 0,  -- also the lease token
      AckedAtUs     INTEGER,                     -- NULL until acked
      Outcome       TEXT                         -- 'processed' or 'skipped', set by the ack
    );
    CREATE INDEX IF NOT EXISTS BrokerPending ON BrokerMessages (Seq) WHERE AckedAtUs IS NULL;
    DELETE FROM BrokerMessages;
  )sql");
}

void Enqueue(Connection& connection, const std::vector<OrderPlaced>& messages) {
  Transaction tx(connection, TransactionKind::kImmediate);
  Statement insert = connection.Prepare(
      "INSERT INTO BrokerMessages (MessageId, OrderId, BookId, Quantity) VALUES (?1, ?2, ?3, ?4)");
  for (const OrderPlaced& m : messages) {
    insert.Bind(1, m.message_id).Bind(2, m.order_id).Bind(3, m.book_id).Bind(4, m.quantity);
    insert.Execute();
  }
  tx.Commit();
}

DurableBroker::DurableBroker(Connection& connection, std::chrono::milliseconds lease,
                             int64_t consumer)
    : db_(connection), lease_(lease), consumer_(consumer) {}

std::optional<LeasedDelivery> DurableBroker::Receive() {
  // One statement, so taking the lease is atomic without an explicit transaction, and it
  // writes from its first step, so it waits for the write lock rather than failing.
  Statement& receive = db_.Cached(
      "UPDATE BrokerMessages SET VisibleAtUs = ?1 + ?2, LeaseOwner = ?3, "
      "DeliveryCount = DeliveryCount + 1 "
      "WHERE Seq = (SELECT Seq FROM BrokerMessages WHERE AckedAtUs IS NULL AND VisibleAtUs <= ?1 "
      "ORDER BY Seq LIMIT 1) "
      "RETURNING Seq, DeliveryCount, MessageId, OrderId, BookId, Quantity");
  const int64_t now = NowMicros();
  receive.Bind(1, now).Bind(2, static_cast<int64_t>(lease_.count()) * 1000).Bind(3, consumer_);
  std::optional<LeasedDelivery> delivery;
  if (receive.Step()) {
    delivery = LeasedDelivery{receive.ColumnInt(0), receive.ColumnInt(1),
                              OrderPlaced{receive.ColumnText(2), receive.ColumnText(3),
                                          receive.ColumnText(4), receive.ColumnInt(5)}};
    while (receive.Step()) {
    }
  }
  receive.Reset();
  return delivery;
}

bool DurableBroker::Ack(const LeasedDelivery& delivery, bool processed) {
  db_.Cached(
         "UPDATE BrokerMessages SET AckedAtUs = ?1, Outcome = ?2 "
         "WHERE Seq = ?3 AND DeliveryCount = ?4 AND AckedAtUs IS NULL")
      .Bind(1, NowMicros())
      .Bind(2, processed ? "processed" : "skipped")
      .Bind(3, delivery.seq)
      .Bind(4, delivery.delivery_count)
      .Execute();
  return db_.Changes() == 1;
}

bool DurableBroker::AllAcked() {
  Statement& query =
      db_.Cached("SELECT EXISTS (SELECT 1 FROM BrokerMessages WHERE AckedAtUs IS NULL)");
  query.Step();
  bool pending = query.ColumnInt(0) != 0;
  query.Reset();
  return !pending;
}

BrokerCounts ReadBrokerCounts(Connection& connection) {
  Statement query = connection.Prepare(
      "SELECT count(*), count(AckedAtUs), coalesce(sum(DeliveryCount), 0), "
      "coalesce(sum(max(DeliveryCount - 1, 0)), 0), "
      "coalesce(sum(Outcome = 'processed'), 0), coalesce(sum(Outcome = 'skipped'), 0) "
      "FROM BrokerMessages");
  query.Step();
  BrokerCounts c;
  c.entries = query.ColumnInt(0);
  c.acked = query.ColumnInt(1);
  c.deliveries = query.ColumnInt(2);
  c.redeliveries = query.ColumnInt(3);
  c.acked_processed = query.ColumnInt(4);
  c.acked_skipped = query.ColumnInt(5);
  return c;
}

std::unordered_set<std::string> UnackedOrders(Connection& connection) {
  std::unordered_set<std::string> orders;
  Statement query = connection.Prepare(
      "SELECT OrderId FROM BrokerMessages GROUP BY OrderId HAVING count(AckedAtUs) = 0");
  while (query.Step()) orders.insert(query.ColumnText(0));
  return orders;
}

}  // namespace dedupsim
