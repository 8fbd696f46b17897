#include "postgres/durable_queue.h"

#include <fmt/format.h>

#include "postgres/workload_database.h"
#include "postgres/store.h"

namespace dedupsim {

namespace {

bool HasTable(PgConnection& c, const std::string& schema, const char* folded) {
  return c.Exec(
              "SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
              "WHERE n.nspname = $1 AND c.relname = $2",
              {schema, std::string(folded)})
             .rows() > 0;
}

// In the open transaction, under the schema's advisory lock: the soak's tables, created in
// our own schema (PgDatabase::Open checked its marker and every table's) with the same
// marker, so the next Open accepts them.
void CreateMissing(PgConnection& c, const std::string& schema) {
  c.Exec("SELECT pg_advisory_xact_lock(hashtext($1))", {"dedupsim:" + schema});
  if (!HasTable(c, schema, "brokermessages")) {
    c.ExecScript(
        "CREATE TABLE BrokerMessages ("
        " Seq bigint NOT NULL PRIMARY KEY,"  // enqueue order
        " MessageId text NOT NULL,"
        " OrderId text NOT NULL,"
        " BookId text NOT NULL,"
        " Quantity bigint NOT NULL,"
        " VisibleAt timestamptz NOT NULL DEFAULT '-infinity',"  // hidden until then: the lease
        " LeaseOwner bigint,"                        // the consumer holding the last lease
        " DeliveryCount bigint NOT NULL DEFAULT 0,"  // also the lease token
        " AckedAt timestamptz,"                      // NULL until acked
        " Outcome text)");                           // 'processed' or 'skipped', set by the ack
    c.ExecScript("CREATE INDEX BrokerPending ON BrokerMessages (Seq) WHERE AckedAt IS NULL");
    c.ExecScript(fmt::format("COMMENT ON TABLE BrokerMessages IS '{}'", kPgMarker));
  }
  if (!HasTable(c, schema, "soakcontrol")) {
    c.ExecScript(
        "CREATE TABLE SoakControl (Id int NOT NULL PRIMARY KEY CHECK (Id = 1),"
        " Done boolean NOT NULL, StartedAt timestamptz NOT NULL)");
    c.ExecScript(fmt::format("COMMENT ON TABLE SoakControl IS '{}'", kPgMarker));
  }
}

}  // namespace

void EnsureBrokerTables(const PgDatabase& db) {
  PgConnection c = db.Connect();
  c.ExecScript("BEGIN");
  CreateMissing(c, db.schema());
  c.ExecScript("COMMIT");
}

void ResetBroker(const PgDatabase& db) {
  PgConnection c = db.Connect();
  c.ExecScript("BEGIN");
  CreateMissing(c, db.schema());
  c.ExecScript("TRUNCATE BrokerMessages");
  c.ExecScript("COMMIT");
}

void StartRun(const PgDatabase& db) {
  PgConnection c = db.Connect();
  c.ExecScript(
      "INSERT INTO SoakControl (Id, Done, StartedAt) VALUES (1, false, clock_timestamp()) "
      "ON CONFLICT (Id) DO UPDATE SET Done = false, StartedAt = clock_timestamp()");
}

void EndRun(const PgDatabase& db) {
  PgConnection c = db.Connect();
  c.ExecScript("UPDATE SoakControl SET Done = true");
}

std::optional<bool> RunDone(PgConnection& c) {
  PgResult r = c.Exec("SELECT Done FROM SoakControl");
  if (r.rows() == 0) return std::nullopt;
  return r.Text(0, 0) == "t";
}

void Enqueue(const PgDatabase& db, const std::vector<OrderPlaced>& messages) {
  std::vector<std::string> ids, orders, books, quantities;
  for (const OrderPlaced& m : messages) {
    ids.push_back(m.message_id);
    orders.push_back(m.order_id);
    books.push_back(m.book_id);
    quantities.push_back(std::to_string(m.quantity));
  }
  PgConnection c = db.Connect();
  c.Exec(
      "INSERT INTO BrokerMessages (Seq, MessageId, OrderId, BookId, Quantity) "
      "SELECT n, m, o, b, q::bigint FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) "
      "WITH ORDINALITY AS u(m, o, b, q, n)",
      {PgTextArray(ids), PgTextArray(orders), PgTextArray(books), PgTextArray(quantities)});
  c.ExecScript("ANALYZE BrokerMessages");
}

PgDurableBroker::PgDurableBroker(PgConnection& connection, std::chrono::milliseconds lease,
                                 int64_t consumer)
    : db_(connection),
      lease_ms_(std::to_string(lease.count())),
      consumer_(std::to_string(consumer)) {}

std::optional<LeasedDelivery> PgDurableBroker::Receive() {
  // One statement (its own transaction): the oldest visible entry no other consumer is
  // leasing right now (SKIP LOCKED passes over rows another Receive has locked), hidden
  // for the lease from the server's clock, its delivery count the new lease token.
  PgResult r = db_.Exec(
      "UPDATE BrokerMessages b SET VisibleAt = clock_timestamp() + $1 * interval '1 millisecond', "
      "LeaseOwner = $2, DeliveryCount = b.DeliveryCount + 1 "
      "FROM (SELECT Seq FROM BrokerMessages WHERE AckedAt IS NULL AND "
      "VisibleAt <= clock_timestamp() ORDER BY Seq LIMIT 1 FOR UPDATE SKIP LOCKED) AS next "
      "WHERE b.Seq = next.Seq "
      "RETURNING b.Seq, b.DeliveryCount, b.MessageId, b.OrderId, b.BookId, b.Quantity",
      {lease_ms_, consumer_}, "BrokerMessages");
  if (r.rows() == 0) return std::nullopt;
  return LeasedDelivery{r.Int(0, 0), r.Int(0, 1),
                        OrderPlaced{r.Text(0, 2), r.Text(0, 3), r.Text(0, 4), r.Int(0, 5)}};
}

bool PgDurableBroker::Ack(const LeasedDelivery& delivery, bool processed) {
  PgResult r = db_.Exec(
      "UPDATE BrokerMessages SET AckedAt = clock_timestamp(), Outcome = $1 "
      "WHERE Seq = $2 AND DeliveryCount = $3 AND AckedAt IS NULL",
      {processed ? "processed" : "skipped", std::to_string(delivery.seq),
       std::to_string(delivery.delivery_count)},
      "BrokerMessages");
  return r.affected() == 1;
}

bool PgDurableBroker::AllAcked() {
  PgResult r = db_.Exec("SELECT NOT EXISTS (SELECT 1 FROM BrokerMessages WHERE AckedAt IS NULL)");
  return r.Text(0, 0) == "t";
}

BrokerCounts ReadBrokerCounts(const PgDatabase& db) {
  PgConnection c = db.Connect();
  PgResult r = c.Exec(
      "SELECT count(*), count(AckedAt), coalesce(sum(DeliveryCount), 0), "
      "coalesce(sum(greatest(DeliveryCount - 1, 0)), 0), "
      "count(*) FILTER (WHERE Outcome = 'processed'), "
      "count(*) FILTER (WHERE Outcome = 'skipped') FROM BrokerMessages");
  BrokerCounts counts;
  counts.entries = r.Int(0, 0);
  counts.acked = r.Int(0, 1);
  counts.deliveries = r.Int(0, 2);
  counts.redeliveries = r.Int(0, 3);
  counts.acked_processed = r.Int(0, 4);
  counts.acked_skipped = r.Int(0, 5);
  return counts;
}

std::unordered_set<std::string> UnackedOrders(const PgDatabase& db) {
  PgConnection c = db.Connect();
  PgResult r =
      c.Exec("SELECT OrderId FROM BrokerMessages GROUP BY OrderId HAVING count(AckedAt) = 0");
  std::unordered_set<std::string> orders;
  for (int row = 0; row < r.rows(); ++row) orders.insert(r.Text(row, 0));
  return orders;
}

PgSharedRun::PgSharedRun(const PgDatabase& db) : db_(db), connection_(db.Connect()) {}

void PgSharedRun::EnsureTables() { EnsureBrokerTables(db_); }

void PgSharedRun::Start() { StartRun(db_); }

void PgSharedRun::End() { EndRun(db_); }

SharedRun::Progress PgSharedRun::ReadProgress() {
  PgResult r = connection_.Exec("SELECT count(AckedAt), count(*) FROM BrokerMessages");
  return Progress{.acked = r.Int(0, 0), .entries = r.Int(0, 1)};
}

int64_t PgSharedRun::ConsumersSeen() {
  return connection_.Exec("SELECT count(DISTINCT LeaseOwner) FROM BrokerMessages").Int(0, 0);
}

}  // namespace dedupsim
