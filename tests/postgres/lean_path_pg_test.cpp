// The inbox's client path on PostgreSQL (PgStore over PgConnection): its statements are
// found once and run through their handles, without copying a parameter into a string of
// its own or formatting a timestamp into a new one, and they behave as the same statements
// run by their text.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "consumers/idempotent.h"
#include "core/clock.h"
#include "pg_support.h"
#include "postgres/connection.h"
#include "postgres/store.h"

namespace {

// Counts the C++ allocations of the thread that asks (libpq allocates with malloc, which is
// not counted: only dedupsim's own code is measured). Replaces the global operator new of
// this test binary; counting is off unless a test turns it on for its thread.
thread_local bool g_counting = false;
thread_local long g_allocations = 0;

}  // namespace

// Every form that allocates without an alignment of its own is replaced together, so that
// what one form allocates another may free (Catch2 allocates with the nothrow form and frees
// with the plain one): AddressSanitizer reports a mismatch otherwise.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  if (g_counting) ++g_allocations;
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new(std::size_t size) {
  if (void* p = operator new(size, std::nothrow)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return operator new(size, std::nothrow);
}
void* operator new[](std::size_t size) { return operator new(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace dedupsim::lean_path_pg_test {
namespace {

using testing::Conninfo;

TEST_CASE("the inbox on PostgreSQL allocates nothing per message once its statements are found",
          "[postgres]") {
  PgDatabase db = PgDatabase::Open(Conninfo(), "t_lean_path");
  PgBackend backend(db, Isolation::kReadCommitted);
  backend.ResetInventory(StockItem{"b-1", "Dune", 1000, 0});
  PgStore store(db.Connect(), Isolation::kReadCommitted);  // untraced, unwatched: the bench's
  SystemClock clock;
  IdempotentReserveStock consumer(store, clock);
  std::vector<OrderPlaced> messages;
  for (int n = 0; n < 40; ++n) {
    // Ids as long as a GUID (a copy of one would allocate: past the short-string buffer),
    // all of one length, so the parameter buffer has grown to its size after the first.
    messages.push_back(OrderPlaced{
        "9f1c2a4e-7b3d-4c5e-8a6f-000000000" + std::to_string(100 + n % 20), "o", "b-1", 1});
  }
  // The first message of each outcome finds its statements and grows the buffers.
  REQUIRE(consumer.Handle(messages[0]));
  REQUIRE_FALSE(consumer.Handle(messages[0]));

  int processed = 0;
  g_allocations = 0;
  g_counting = true;
  for (size_t n = 1; n < messages.size(); ++n) processed += consumer.Handle(messages[n]) ? 1 : 0;
  g_counting = false;
  CHECK(g_allocations == 0);
  CHECK(processed == 19);  // ...101 to ...119 once each; their second copies are duplicates
  CHECK(backend.ReadStock("b-1").reserved == 20);
  CHECK(backend.CountRows("Inbox") == 20);
}

TEST_CASE("a statement found once and the same text run by Exec are one prepared statement",
          "[postgres]") {
  PgConnection c(Conninfo());
  PgStatement add = c.Statement("SELECT $1::bigint + $2::bigint");
  CHECK(c.Statement("SELECT $1::bigint + $2::bigint").valid());
  CHECK(c.Exec(add, {"40", "2"}).Int(0, 0) == 42);
  CHECK(c.Exec("SELECT $1::bigint + $2::bigint", {"1", "2"}).Int(0, 0) == 3);
  // Parameters need only live for the call: a temporary's text is copied before sending.
  CHECK(c.Exec(add, {std::string("7"), std::string("8")}).Int(0, 0) == 15);
  CHECK(c.Exec("SELECT count(*) FROM pg_prepared_statements").Int(0, 0) == 2);  // add, and this
  CHECK(c.statements_sent() == 4);

  PgConnection other(Conninfo());
  CHECK_THROWS_AS(other.Exec(add, {"1", "1"}), DatabaseError);  // not one of other's statements
}

}  // namespace
}  // namespace dedupsim::lean_path_pg_test
