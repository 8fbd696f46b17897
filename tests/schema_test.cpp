// The schema: a version 1 database upgraded in place on open, a newer one refused, and
// the Inbox retention cleanup on a manual clock.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "sqlite/database.h"
#include "sqlite/error.h"
#include "sqlite/retention.h"
#include "sqlite/schema.h"
#include "sqlite/side_store.h"
#include "sqlite/statement.h"
#include "support.h"

namespace schema_test {

using namespace dedupsim;
using dedupsim::testing::ReadFile;
using dedupsim::testing::TempDir;
using dedupsim::testing::WriteFile;

namespace {

// A database as dedupsim's schema version 1 made it, with one Inbox row.
void MakeVersion1(const std::string& path, int user_version = 1) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  std::string sql =
      "PRAGMA application_id=" + std::to_string(static_cast<int32_t>(kApplicationId)) + ";"
      "CREATE TABLE StockItems (BookId TEXT NOT NULL PRIMARY KEY, Title TEXT NOT NULL,"
      "  OnHand INTEGER NOT NULL, Reserved INTEGER NOT NULL DEFAULT 0);"
      "CREATE TABLE Inbox (MessageId TEXT NOT NULL, Consumer TEXT NOT NULL,"
      "  ReceivedAt TEXT NOT NULL, CompletedAt TEXT, PRIMARY KEY (MessageId, Consumer))"
      "  WITHOUT ROWID;"
      "INSERT INTO Inbox VALUES ('m-1', 'c', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z');"
      "PRAGMA user_version=" + std::to_string(user_version) + ";";
  REQUIRE(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
}

int64_t Count(Connection& c, const std::string& sql) {
  Statement q = c.Prepare(sql);
  q.Step();
  return q.ColumnInt(0);
}

}  // namespace

TEST_CASE("a version 1 database is upgraded on open and keeps its rows", "[schema]") {
  TempDir dir;
  std::string path = dir.File("v1.db");
  MakeVersion1(path);
  {
    DatabaseFile db = DatabaseFile::Open(path, DatabaseSettings{});
    Connection c = db.Connect();
    CHECK(SchemaVersion(c) == kSchemaVersion);
    CHECK(Count(c, "SELECT count(*) FROM pragma_table_info('Inbox') WHERE name = 'PayloadHash'") ==
          1);
    CHECK(Count(c, "SELECT count(*) FROM StockReservations") == 0);
    CHECK(Count(c, "SELECT count(*) FROM InboxByMessageId") == 0);
    auto row = FindInboxRow(c, "m-1", "c");
    REQUIRE(row);
    CHECK_FALSE(row->payload_hash);
  }
  // A second open (one process at a time: the first is closed) finds nothing left to do.
  DatabaseFile again = DatabaseFile::Open(path, DatabaseSettings{});
  Connection c2 = again.Connect();
  CHECK(SchemaVersion(c2) == kSchemaVersion);
  CHECK(CountInboxRows(c2) == 1);
}

TEST_CASE("a database from a newer dedupsim is refused", "[schema]") {
  TempDir dir;
  std::string path = dir.File("v99.db");
  MakeVersion1(path, 99);
  CHECK_THROWS_AS(DatabaseFile::Open(path, DatabaseSettings{}), DatabaseError);
  ConnectionOptions options;
  Connection c(path, options);
  CHECK(SchemaVersion(c) == 99);
  CHECK(Count(c, "SELECT count(*) FROM pragma_table_info('Inbox') WHERE name = 'PayloadHash'") == 0);
}

TEST_CASE("IfMissing::kFail does not create the file", "[schema]") {
  TempDir dir;
  std::string path = dir.File("absent.db");
  CHECK_THROWS_AS(DatabaseFile::Open(path, DatabaseSettings{}, IfMissing::kFail), DatabaseError);
  CHECK(ReadFile(path).empty());
  CHECK(::access(path.c_str(), F_OK) != 0);
}

TEST_CASE("the cleanup deletes completed records older than the cutoff, only those",
          "[retention]") {
  TempDir dir;
  DatabaseFile db = DatabaseFile::Open(dir.File("r.db"), DatabaseSettings{});
  Connection c = db.Connect();
  const TimePoint day0 = TimePoint(std::chrono::hours(24 * 20000));
  ManualClock clock(day0);
  auto insert = [&](const char* id, int day, bool completed) {
    std::string at = FormatTimestamp(day0 + std::chrono::hours(24 * day));
    Statement s = c.Prepare(
        "INSERT INTO Inbox (MessageId, Consumer, ReceivedAt, CompletedAt) VALUES (?1, 'c', ?2, ?3)");
    s.Bind(1, id).Bind(2, at);
    if (completed) {
      s.Bind(3, at);
    } else {
      s.BindNull(3);
    }
    s.Execute();
  };
  insert("old", 0, true);
  insert("old-in-progress", 0, false);
  insert("recent", 10, true);
  clock.Set(day0 + std::chrono::hours(24 * 20));
  CleanupResult r = DeleteInboxRecordsOlderThan(c, clock.Now(), std::chrono::hours(24 * 14));
  CHECK(r.deleted == 1);
  CHECK(r.kept == 2);
  CHECK(r.kept_in_progress == 1);
  CHECK(r.cutoff == FormatTimestamp(day0 + std::chrono::hours(24 * 6)));
  CHECK_FALSE(FindInboxRow(c, "old", "c"));
  CHECK(FindInboxRow(c, "old-in-progress", "c"));
  CHECK(FindInboxRow(c, "recent", "c"));
  // A record exactly at the cutoff is kept: only older ones go.
  CleanupResult edge = DeleteInboxRecordsOlderThan(c, clock.Now(), std::chrono::hours(24 * 10));
  CHECK(edge.deleted == 0);
}

TEST_CASE("a side store refuses a foreign file at its path and removes its own", "[schema]") {
  TempDir dir;
  DatabaseFile db = DatabaseFile::Open(dir.File("main.db"), DatabaseSettings{});
  std::string path = dir.File("main.db.cache");
  WriteFile(path, "not mine");
  CHECK_THROWS_AS(SideStoreFile::CreateNextTo(db, ".cache", "CREATE TABLE k (a)"), DatabaseError);
  CHECK(ReadFile(path) == "not mine");
  ::unlink(path.c_str());
  {
    SideStoreFile store = SideStoreFile::CreateNextTo(db, ".cache", "CREATE TABLE k (a)");
    CHECK(::access(path.c_str(), F_OK) == 0);
    // One left behind by an earlier run is ours, and is replaced.
    SideStoreFile second = SideStoreFile::CreateNextTo(db, ".cache", "CREATE TABLE k (a)");
    Connection c = second.Connect();
    CHECK(Count(c, "SELECT count(*) FROM k") == 0);
  }
  CHECK(::access(path.c_str(), F_OK) != 0);
}

TEST_CASE("a side store commits at the run's synchronous level, appending to a log it began",
          "[schema]") {
  TempDir dir;
  for (Synchronous level : {Synchronous::kOff, Synchronous::kNormal, Synchronous::kFull}) {
    INFO(ToString(level));
    DatabaseSettings settings;
    settings.synchronous = level;
    DatabaseFile db =
        DatabaseFile::Open(dir.File(fmt::format("main-{}.db", ToString(level))), settings);
    SideStoreFile store = SideStoreFile::CreateNextTo(db, ".cache", "CREATE TABLE k (a)");
    // The set-up left its first frame in the log: a lesson's first commit appends to it
    // instead of starting a log (which syncs its header and the folder).
    struct stat wal {};
    REQUIRE(::stat((store.path() + "-wal").c_str(), &wal) == 0);
    CHECK(wal.st_size > 32);  // a header and a frame
    Connection c = store.Connect();
    CHECK(Count(c, "SELECT count(*) FROM k") == 0);
    CHECK(Count(c, "PRAGMA synchronous") == static_cast<int64_t>(level));  // 0, 1, 2
  }
}

TEST_CASE("a version 2 database gains receive counts and leases in place", "[schema]") {
  TempDir dir;
  std::string path = dir.File("v2.db");
  MakeVersion1(path);
  {
    // What dedupsim's schema version 2 added to version 1.
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db,
                         "ALTER TABLE Inbox ADD COLUMN PayloadHash TEXT;"
                         "CREATE TABLE StockReservations (OrderId TEXT NOT NULL, BookId TEXT NOT "
                         "NULL, Quantity INTEGER NOT NULL, ReservedAt TEXT NOT NULL, PRIMARY KEY "
                         "(OrderId, BookId)) WITHOUT ROWID;"
                         "PRAGMA user_version=2;",
                         nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  DatabaseFile db = DatabaseFile::Open(path, DatabaseSettings{});
  Connection c = db.Connect();
  CHECK(SchemaVersion(c) == 3);
  for (const char* column : {"ReceiveCount", "LastReceivedAt", "Owner", "LeaseExpiresAt"}) {
    INFO(column);
    CHECK(Count(c, std::string("SELECT count(*) FROM pragma_table_info('Inbox') WHERE name = '") +
                       column + "'") == 1);
  }
  CHECK(Count(c, "SELECT count(*) FROM Outbox") == 0);
  CHECK(Count(c, "SELECT count(*) FROM ShipmentRequests") == 0);
  CHECK(Count(c, "SELECT count(*) FROM AuditLog") == 0);
  // The row from before the upgrade was received once, and has no lease.
  auto row = FindInboxRow(c, "m-1", "c");
  REQUIRE(row);
  CHECK(row->receive_count == 1);
  CHECK_FALSE(row->owner);
  CHECK_FALSE(row->lease_expires_at);
  CHECK(row->completed_at == "2026-01-01T00:00:00.000Z");
}

}  // namespace schema_test
