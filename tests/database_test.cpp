// DatabaseFile: only a file dedupsim created is ever opened for writing; everything else is
// refused before SQLite touches it.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include "database.h"
#include "schema.h"
#include "sqlite/connection.h"
#include "sqlite/error.h"
#include "sqlite/statement.h"
#include "support.h"

using namespace dedupsim;
using dedupsim::testing::ReadFile;
using dedupsim::testing::TempDir;
using dedupsim::testing::WriteFile;

TEST_CASE("a new database is created, marked, and reusable", "[database]") {
  TempDir dir;
  std::string path = dir.File("shop.db");
  {
    DatabaseFile db = DatabaseFile::Open(path, {});
    CHECK_FALSE(db.temporary());
    Connection c = db.Connect();
    ResetInventory(c, {"b", "Dune", 10, 0});
  }
  CHECK_NOTHROW(CheckIsDedupsimDatabase(path));
  DatabaseFile again = DatabaseFile::Open(path, {});
  Connection c = again.Connect();
  CHECK(ReadStock(c, "b").title == "Dune");
  Statement q = c.Prepare("PRAGMA user_version");
  q.Step();
  CHECK(q.ColumnInt(0) == kSchemaVersion);
}

TEST_CASE("a kept database switches journal mode on request", "[database]") {
  TempDir dir;
  std::string path = dir.File("shop.db");
  DatabaseSettings wal;
  { DatabaseFile db = DatabaseFile::Open(path, wal); }
  DatabaseSettings del;
  del.journal = JournalMode::kDelete;
  DatabaseFile db = DatabaseFile::Open(path, del);
  Connection c = db.Connect();
  Statement q = c.Prepare("PRAGMA journal_mode");
  q.Step();
  CHECK(q.ColumnText(0) == "delete");
}

TEST_CASE("a temporary database is removed with its companions", "[database]") {
  std::string path;
  {
    DatabaseFile db = DatabaseFile::CreateTemporary({});
    path = db.path();
    Connection c = db.Connect();
    ResetInventory(c, {"b", "Dune", 10, 0});
    struct stat st {};
    CHECK(::stat(path.c_str(), &st) == 0);
  }
  struct stat st {};
  CHECK(::stat(path.c_str(), &st) != 0);
  CHECK(::stat((path + "-wal").c_str(), &st) != 0);
  CHECK(::stat((path + "-shm").c_str(), &st) != 0);
}

TEST_CASE("files that are not dedupsim databases are refused and left as they were",
          "[database]") {
  TempDir dir;
  SECTION("a text file") {
    std::string path = dir.File("notes.txt");
    WriteFile(path, "hello, this is not a database\n");
    CHECK_THROWS_WITH(DatabaseFile::Open(path, {}), Catch::Contains("not an SQLite database"));
    CHECK(ReadFile(path) == "hello, this is not a database\n");
  }
  SECTION("an empty file") {
    std::string path = dir.File("empty.db");
    WriteFile(path, "");
    CHECK_THROWS_WITH(DatabaseFile::Open(path, {}), Catch::Contains("empty file"));
    CHECK(ReadFile(path).empty());
  }
  SECTION("another application's SQLite database") {
    std::string path = dir.File("other.db");
    {
      ConnectionOptions options;
      options.create = true;
      Connection c(path, options);
      c.ExecScript("CREATE TABLE Inbox (x); INSERT INTO Inbox VALUES (1);");
    }
    std::string before = ReadFile(path);
    CHECK_THROWS_WITH(DatabaseFile::Open(path, {}), Catch::Contains("another application"));
    CHECK(ReadFile(path) == before);
  }
  SECTION("a leftover WAL without its database") {
    std::string path = dir.File("gone.db");
    WriteFile(path + "-wal", "stale");
    CHECK_THROWS_WITH(DatabaseFile::Open(path, {}), Catch::Contains("exists without"));
    CHECK(ReadFile(path + "-wal") == "stale");
    struct stat st {};
    CHECK(::stat(path.c_str(), &st) != 0);
  }
  SECTION("a directory") {
    CHECK_THROWS_WITH(DatabaseFile::Open(dir.path(), {}), Catch::Contains("is a directory"));
  }
  SECTION("a missing folder") {
    CHECK_THROWS_WITH(DatabaseFile::Open(dir.File("missing/shop.db"), {}),
                      Catch::Contains("cannot create"));
  }
}
