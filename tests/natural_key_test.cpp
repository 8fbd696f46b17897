// The natural-key consumer: a reservation per (OrderId, BookId), the work in the same
// transaction, a duplicate refused by the key whatever its MessageId.
#include "consumers/natural_key.h"

#include <catch2/catch.hpp>

#include "sqlite/schema.h"
#include "sqlite/statement.h"
#include "sqlite/store.h"
#include "support.h"

namespace natural_key_test {

using namespace dedupsim;

namespace {

int64_t Reservations(Connection& c) {
  Statement q = c.Prepare("SELECT count(*) FROM StockReservations");
  q.Step();
  return q.ColumnInt(0);
}

}  // namespace

TEST_CASE("natural-key: the second delivery of an order is skipped", "[natural-key]") {
  testing::Fixture f;
  Connection db = f.db.Connect();
  SqliteStore store(db);
  StockItem dune{"book-1", "Dune", 10, 0};
  ResetInventory(db, dune);
  OrderPlaced m{"m-1", "o-1", "book-1", 2};
  NaturalKeyReserveStock consumer(store, f.clock);
  CHECK(consumer.Handle(m));
  CHECK_FALSE(consumer.Handle(m));
  // A producer duplicate: a new MessageId for the same order is caught too.
  OrderPlaced resent = m;
  resent.message_id = "m-2";
  CHECK_FALSE(consumer.Handle(resent));
  CHECK(ReadStock(db, "book-1").reserved == 2);
  CHECK(Reservations(db) == 1);
  CHECK_FALSE(db.InTransaction());
}

TEST_CASE("natural-key: a crash before commit leaves neither reservation nor stock",
          "[natural-key]") {
  testing::Fixture f;
  Connection db = f.db.Connect();
  SqliteStore store(db);
  ResetInventory(db, StockItem{"book-1", "Dune", 10, 0});
  OrderPlaced m{"m-1", "o-1", "book-1", 3};
  {
    NaturalKeyReserveStock consumer(store, f.clock);
    consumer.before_commit = CrashHook("BeforeCommit");
    CHECK_THROWS_AS(consumer.Handle(m), SimulatedCrash);
  }
  CHECK(ReadStock(db, "book-1").reserved == 0);
  CHECK(Reservations(db) == 0);
  CHECK(NaturalKeyReserveStock(store, f.clock).Handle(m));
  CHECK(ReadStock(db, "book-1").reserved == 3);
}

}  // namespace natural_key_test
