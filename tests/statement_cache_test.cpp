// The hot-path changes in the SQLite layer keep their contracts: bound text is copied (the
// caller's buffer may go away at once), a cached statement comes back reset and with no
// bindings, Reset may be called any number of times, and BEGIN/COMMIT/ROLLBACK prepared
// once per connection are still traced.
#include <catch2/catch.hpp>
#include <chrono>

#include "sqlite/connection.h"
#include "sqlite/error.h"
#include "sqlite/schema.h"
#include "sqlite/statement.h"
#include "sqlite/store.h"
#include "sqlite/transaction.h"
#include "support.h"
#include "trace/trace.h"

namespace statement_cache_test {

using namespace dedupsim;
using dedupsim::testing::TempDir;

namespace {

Connection Open(const std::string& path) {
  ConnectionOptions options;
  options.create = true;
  Connection c(path, options);
  c.ExecScript("CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, v TEXT)");
  return c;
}

std::string Value(Connection& c, const std::string& key) {
  Statement q = c.Prepare("SELECT v FROM t WHERE k = ?1");
  q.Bind(1, key);
  return q.Step() ? (q.ColumnIsNull(0) ? "NULL" : q.ColumnText(0)) : "missing";
}

}  // namespace

TEST_CASE("bound text is the statement's own copy", "[sqlite][cache]") {
  TempDir dir;
  Connection c = Open(dir.File("t.db"));
  Statement& insert = c.Cached("INSERT INTO t (k, v) VALUES (?1, ?2)");
  {
    std::string key = "a-key-longer-than-the-small-string-buffer";
    std::string value = "first value, also long enough to live on the heap";
    insert.Bind(1, key).Bind(2, value);
    key.assign(key.size(), 'x');  // the caller reuses its buffers before the step
    value.clear();
    value.shrink_to_fit();
  }
  insert.Execute();
  CHECK(Value(c, "a-key-longer-than-the-small-string-buffer") ==
        "first value, also long enough to live on the heap");
  // Rebinding the same parameter, shorter then longer, keeps each value whole.
  c.Cached("INSERT INTO t (k, v) VALUES (?1, ?2)")
      .Bind(1, "b")
      .Bind(2, "x")
      .Bind(2, std::string(100, 'y'))
      .Execute();
  CHECK(Value(c, "b") == std::string(100, 'y'));
}

TEST_CASE("a cached statement comes back reset, with no bindings", "[sqlite][cache]") {
  TempDir dir;
  Connection c = Open(dir.File("t.db"));
  Statement& first = c.Cached("INSERT INTO t (k, v) VALUES (?1, ?2)");
  first.Bind(1, "a").Bind(2, "v").Execute();
  Statement& again = c.Cached("INSERT INTO t (k, v) VALUES (?1, ?2)");
  CHECK(&first == &again);
  again.Bind(1, "b").Execute();  // ?2 was not bound this time: NULL, not "v"
  CHECK(Value(c, "b") == "NULL");
  // Bound but never run: the next Cached() clears it.
  c.Cached("INSERT INTO t (k, v) VALUES (?1, ?2)").Bind(1, "c").Bind(2, "stale");
  c.Cached("INSERT INTO t (k, v) VALUES (?1, ?2)").Bind(1, "d").Execute();
  CHECK(Value(c, "d") == "NULL");
  CHECK(Value(c, "c") == "missing");
  // A read left mid-way is reset by Cached() too, so its read transaction ends.
  Statement& read = c.Cached("SELECT k FROM t ORDER BY k");
  CHECK(read.Step());
  c.Cached("SELECT k FROM t ORDER BY k");
  CHECK_FALSE(c.InTransaction());
  read.Reset();
  read.Reset();  // twice is fine
}

TEST_CASE("a failed cached statement can run again", "[sqlite][cache]") {
  TempDir dir;
  Connection c = Open(dir.File("t.db"));
  c.ExecScript("CREATE TABLE n (k TEXT NOT NULL)");
  Statement& insert = c.Cached("INSERT INTO n (k) VALUES (?1)");
  CHECK_THROWS_AS(insert.Execute(), SqliteError);  // NULL: NOT NULL constraint
  c.Cached("INSERT INTO n (k) VALUES (?1)").Bind(1, "ok").Execute();
  Statement q = c.Prepare("SELECT count(*) FROM n");
  q.Step();
  CHECK(q.ColumnInt(0) == 1);
}

TEST_CASE("transactions reuse their BEGIN and COMMIT and are still traced", "[sqlite][cache]") {
  TempDir dir;
  Connection c = Open(dir.File("t.db"));
  Recorder recorder;
  c.SetTrace(&recorder, "A");
  for (int i = 0; i < 3; ++i) {
    Transaction tx(c);
    c.Cached("INSERT INTO t (k, v) VALUES (?1, 'v')").Bind(1, std::to_string(i)).Execute();
    if (i == 1) {
      tx.Rollback();
    } else {
      tx.Commit();
    }
  }
  {
    Transaction dropped(c, TransactionKind::kImmediate);  // rolled back by the destructor
  }
  std::vector<std::string> kinds;
  for (const TraceEvent& e : recorder.Events()) {
    if (e.kind == "sql") kinds.push_back(e.detail.substr(0, 6));  // not the lock's notes
  }
  CHECK(kinds == std::vector<std::string>{"BEGIN", "INSERT", "COMMIT", "BEGIN", "INSERT", "ROLLBA",
                                          "BEGIN", "INSERT", "COMMIT", "BEGIN ", "ROLLBA"});
  CHECK(Value(c, "0") == "v");
  CHECK(Value(c, "1") == "missing");
  CHECK(Value(c, "2") == "v");
  CHECK_FALSE(c.InTransaction());
}

TEST_CASE("a text view with no data still binds NULL", "[sqlite][cache]") {
  TempDir dir;
  Connection c = Open(dir.File("t.db"));
  c.Cached("INSERT INTO t (k, v) VALUES (?1, ?2)")
      .Bind(1, "a")
      .Bind(2, std::string_view())
      .Execute();
  c.Cached("INSERT INTO t (k, v) VALUES (?1, ?2)").Bind(1, "b").Bind(2, "").Execute();
  CHECK(Value(c, "a") == "NULL");
  CHECK(Value(c, "b").empty());
}

TEST_CASE("the cache's generation changes whenever its statements may have gone",
          "[sqlite][cache]") {
  TempDir dir;
  Connection a = Open(dir.File("a.db"));
  Statement* kept = &a.Cached("SELECT 1");
  const uint64_t first = a.cache_generation();
  a.Cached("SELECT 2");  // adding to the cache keeps what was there
  CHECK(a.cache_generation() == first);
  // Moved: the statements go with the cache's generation; the moved-from gets a new one.
  Connection b(std::move(a));
  CHECK(b.cache_generation() == first);
  CHECK(a.cache_generation() != first);
  CHECK(&b.Cached("SELECT 1") == kept);
  // Moved into: the old statements are finalized, the new ones keep their generation.
  Connection c = Open(dir.File("c.db"));
  const uint64_t third = c.cache_generation();
  b = std::move(c);
  CHECK(b.cache_generation() == third);
  CHECK(b.cache_generation() != first);
  // Closed: a new generation, never an old one again.
  b.Close();
  CHECK(b.cache_generation() != third);
  CHECK(b.cache_generation() != first);
}

TEST_CASE("the store's kept statements follow the connection they run on", "[sqlite][cache]") {
  TempDir dir;
  auto open = [&](const std::string& name) {
    ConnectionOptions options;
    options.create = true;
    Connection c(dir.File(name), options);
    CreateSchema(c);
    return c;
  };
  Connection db = open("first.db");
  SqliteStore store(db);  // borrows db, which is replaced and closed below
  const auto now = std::chrono::system_clock::now();
  auto claim = [&](const char* id) {
    store.Begin(TransactionKind::kDeferred);
    InsertResult r = store.ClaimCompleted(InboxKey::kMessageIdAndConsumer, id, "c", now);
    store.Commit();
    return r;
  };
  CHECK(claim("m-1") == InsertResult::kInserted);
  CHECK(claim("m-1") == InsertResult::kDuplicateKey);
  // Another file moved into the same Connection object: the store's next statements run
  // there, not on the finalized statements of the first file.
  db = open("second.db");
  CHECK(claim("m-1") == InsertResult::kInserted);
  CHECK(CountInboxRows(db) == 1);
  {
    ConnectionOptions options;
    Connection first(dir.File("first.db"), options);
    CHECK(CountInboxRows(first) == 1);
  }
  // Closed: the store's next statement fails as the connection's own would.
  db.Close();
  CHECK_THROWS(store.Begin(TransactionKind::kDeferred));
}

}  // namespace statement_cache_test
