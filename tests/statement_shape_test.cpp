// What the PostgreSQL layer reads from its own statements for the trace
// (postgres/statement_shape.h): the operation the views draw transactions from, and the
// table as the schema spells it. No server: pure functions.
#include <catch2/catch.hpp>

#include "postgres/statement_shape.h"

namespace statement_shape_test {

using dedupsim::CanonicalTableName;
using dedupsim::ShapeOf;

TEST_CASE("a statement's shape: transactions open and end where the server's do", "[postgres]") {
  // Mutations caught: START read as its own word (the trace would show no transaction
  // opening); ROLLBACK TO read as ROLLBACK (a savepoint's rollback would end the
  // transaction on the picture while the server goes on with it).
  CHECK(ShapeOf("START TRANSACTION ISOLATION LEVEL SERIALIZABLE").op == "BEGIN");
  CHECK(ShapeOf("BEGIN").op == "BEGIN");
  CHECK(ShapeOf("COMMIT").op == "COMMIT");
  CHECK(ShapeOf("ROLLBACK").op == "ROLLBACK");
  CHECK(ShapeOf("ROLLBACK TO SAVEPOINT claim").op == "ROLLBACK TO");
  CHECK(ShapeOf("SAVEPOINT claim").op == "SAVEPOINT");
  CHECK(ShapeOf("RELEASE SAVEPOINT claim").op == "RELEASE");
  CHECK(ShapeOf("SET lock_timeout = '1s'").op == "OTHER");
  CHECK(ShapeOf("BEGIN").table.empty());
}

TEST_CASE("a statement's shape: the table it writes, as the schema spells it", "[postgres]") {
  // Mutation caught: the server's folded name kept ("stockitems"), which no view or probe
  // knows as the lessons' table.
  auto insert = ShapeOf("INSERT INTO Inbox (MessageId, Consumer) VALUES ($1, $2)");
  CHECK(insert.op == "INSERT");
  CHECK(insert.table == "Inbox");
  auto update = ShapeOf("update stockitems SET Reserved = Reserved + $1 WHERE BookId = $2");
  CHECK(update.op == "UPDATE");
  CHECK(update.table == "StockItems");
  auto select = ShapeOf("SELECT 1 FROM \"StockReservations\" WHERE OrderId = $1");
  CHECK(select.op == "SELECT");
  CHECK(select.table == "StockReservations");
  auto remove = ShapeOf("DELETE FROM InboxByMessageId WHERE MessageId = $1");
  CHECK(remove.op == "DELETE");
  CHECK(remove.table == "InboxByMessageId");
  CHECK(CanonicalTableName("inboxbymessageid") == "InboxByMessageId");
  CHECK(CanonicalTableName("BrokerMessages") == "BrokerMessages");  // not ours to respell
}

TEST_CASE("a statement's shape: an INSERT that may update a row instead", "[postgres]") {
  // PostgreSQL's "INSERT 0 1" is the same for a row inserted and one its ON CONFLICT ... DO
  // UPDATE updated: such an INSERT's rows are said "inserted or updated". Mutation caught:
  // may_update never set (the upsert's update read "1 row inserted" on PostgreSQL).
  CHECK(ShapeOf("INSERT INTO StockReservations (OrderId) VALUES ($1) ON CONFLICT (OrderId, "
                "BookId) DO UPDATE SET Quantity = excluded.Quantity")
            .may_update);
  CHECK(ShapeOf("insert into t values (1) on conflict (k) do\n\tupdate set v = 2").may_update);
  CHECK_FALSE(ShapeOf("INSERT INTO Inbox (MessageId) VALUES ($1) ON CONFLICT DO NOTHING").may_update);
  CHECK_FALSE(ShapeOf("INSERT INTO Inbox (MessageId) VALUES ($1)").may_update);
  CHECK_FALSE(ShapeOf("UPDATE StockItems SET Reserved = 1").may_update);  // an UPDATE's own
}

}  // namespace statement_shape_test
