// Each consumer with each of its hooks, against a real database file.
#include <catch2/catch.hpp>

#include <thread>

#include "consumers/check_then_process.h"
#include "consumers/email.h"
#include "consumers/idempotent.h"
#include "consumers/naive.h"
#include "sqlite/schema.h"
#include "sqlite/store.h"
#include "support.h"

namespace consumers_test {

using namespace dedupsim;
using dedupsim::testing::Fixture;

namespace {

struct Shop {
  Fixture fx;
  StockItem dune{"book-1", "Dune", 10, 0};
  OrderPlaced order{"m-1", "o-1", "book-1", 2};
  ManualClock clock{TimePoint(std::chrono::seconds(1'800'000'000))};

  Shop() {
    Connection c = fx.db.Connect();
    ResetInventory(c, dune);
  }
  int64_t Reserved() {
    Connection c = fx.db.Connect();
    return ReadStock(c, dune.book_id).reserved;
  }
  int64_t InboxRows() {
    Connection c = fx.db.Connect();
    return CountInboxRows(c);
  }
};

}  // namespace

TEST_CASE("naive reserves on every delivery", "[consumers]") {
  Shop shop;
  for (int i = 0; i < 3; ++i) {
    Connection c = shop.fx.db.Connect();
    SqliteStore store(c);
    NaiveReserveStock(store).Handle(shop.order);
  }
  CHECK(shop.Reserved() == 6);
  CHECK(shop.InboxRows() == 0);
}

TEST_CASE("check-then-process skips a message it has recorded", "[consumers]") {
  Shop shop;
  Connection c = shop.fx.db.Connect();
  SqliteStore store(c);
  CheckThenProcessReserveStock consumer(store, shop.clock);
  CHECK(consumer.Handle(shop.order));
  CHECK_FALSE(consumer.Handle(shop.order));
  CHECK(shop.Reserved() == 2);
  auto row = FindInboxRow(c, "m-1", CheckThenProcessReserveStock::kName);
  REQUIRE(row);
  CHECK(row->received_at == "2027-01-15T08:00:00.000Z");
  CHECK(row->completed_at == row->received_at);
}

TEST_CASE("check-then-process: a crash at AfterStockCommitted keeps the stock, loses the record",
          "[consumers]") {
  Shop shop;
  {
    Connection c = shop.fx.db.Connect();
    SqliteStore store(c);
    CheckThenProcessReserveStock consumer(store, shop.clock);
    consumer.after_stock_committed = CrashHook("AfterStockCommitted");
    CHECK_THROWS_AS(consumer.Handle(shop.order), SimulatedCrash);
  }
  CHECK(shop.Reserved() == 2);
  CHECK(shop.InboxRows() == 0);
  Connection c = shop.fx.db.Connect();
  SqliteStore store(c);
  CHECK(CheckThenProcessReserveStock(store, shop.clock).Handle(shop.order));
  CHECK(shop.Reserved() == 4);
}

TEST_CASE("the inbox processes once and reports the duplicate as not processed", "[consumers]") {
  Shop shop;
  Connection c = shop.fx.db.Connect();
  SqliteStore store(c);
  IdempotentReserveStock consumer(store, shop.clock);
  CHECK(consumer.Handle(shop.order));
  CHECK_FALSE(consumer.Handle(shop.order));
  CHECK_FALSE(c.InTransaction());
  CHECK(shop.Reserved() == 2);
  CHECK(shop.InboxRows() == 1);
}

TEST_CASE("the inbox: a crash at BeforeCommit rolls back the row and the stock", "[consumers]") {
  Shop shop;
  {
    Connection c = shop.fx.db.Connect();
    SqliteStore store(c);
    IdempotentReserveStock consumer(store, shop.clock);
    consumer.before_commit = CrashHook("BeforeCommit");
    CHECK_THROWS_AS(consumer.Handle(shop.order), SimulatedCrash);
    CHECK_FALSE(c.InTransaction());  // the transaction's destructor rolled back
  }
  CHECK(shop.Reserved() == 0);
  CHECK(shop.InboxRows() == 0);
  Connection c = shop.fx.db.Connect();
  SqliteStore store(c);
  CHECK(IdempotentReserveStock(store, shop.clock).Handle(shop.order));
  CHECK(shop.Reserved() == 2);
}

TEST_CASE("the inbox: a BeforeCommit delay holds the write lock against a second copy",
          "[consumers]") {
  Shop shop;
  bool first = false, second = true;
  BusyStats second_busy;
  std::thread a([&] {
    Connection c = shop.fx.db.Connect();
    SqliteStore store(c);
    IdempotentReserveStock consumer(store, shop.clock);
    consumer.before_commit = [] { std::this_thread::sleep_for(std::chrono::milliseconds(200)); };
    first = consumer.Handle(shop.order);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  {
    Connection c = shop.fx.db.Connect();
    SqliteStore store(c);
    second = IdempotentReserveStock(store, shop.clock).Handle(shop.order);
    second_busy = c.busy();
  }
  a.join();
  CHECK(first);
  CHECK_FALSE(second);
  CHECK(second_busy.calls > 0);
  CHECK(second_busy.waited > std::chrono::milliseconds(50));
  CHECK(shop.Reserved() == 2);
}

TEST_CASE("email: sent once, then AlreadySent", "[consumers]") {
  Shop shop;
  InMemoryEmailProvider provider;
  Connection c = shop.fx.db.Connect();
  SqliteStore store(c);
  SendStockReservedEmail consumer(store, provider, shop.clock);
  CHECK(consumer.Handle(shop.order) == EmailOutcome::kSent);
  CHECK(consumer.Handle(shop.order) == EmailOutcome::kAlreadySent);
  REQUIRE(provider.sent_count() == 1);
  CHECK(provider.sent()[0] == "m-1: Order o-1: 2 book(s) reserved");
}

TEST_CASE("email: a crash at AfterSend leaves the row in progress -> NeedsReconciliation",
          "[consumers]") {
  Shop shop;
  InMemoryEmailProvider provider;
  {
    Connection c = shop.fx.db.Connect();
    SqliteStore store(c);
    SendStockReservedEmail consumer(store, provider, shop.clock);
    consumer.after_send = CrashHook("AfterSend");
    CHECK_THROWS_AS(consumer.Handle(shop.order), SimulatedCrash);
  }
  Connection c = shop.fx.db.Connect();
  SqliteStore store(c);
  auto row = FindInboxRow(c, "m-1", SendStockReservedEmail::kName);
  REQUIRE(row);
  CHECK_FALSE(row->completed_at.has_value());
  CHECK(SendStockReservedEmail(store, provider, shop.clock).Handle(shop.order) ==
        EmailOutcome::kNeedsReconciliation);
  CHECK(provider.sent_count() == 1);
}

TEST_CASE("email and inventory keep separate Inbox rows for the same message", "[consumers]") {
  Shop shop;
  InMemoryEmailProvider provider;
  Connection c = shop.fx.db.Connect();
  SqliteStore store(c);
  CHECK(IdempotentReserveStock(store, shop.clock).Handle(shop.order));
  CHECK(SendStockReservedEmail(store, provider, shop.clock).Handle(shop.order) == EmailOutcome::kSent);
  CHECK(shop.InboxRows() == 2);
}

}  // namespace consumers_test
