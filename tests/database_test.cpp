// DatabaseFile: only a file dedupsim created is ever opened for writing; everything else is
// refused before SQLite touches it.
#include "sqlite/database.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <optional>
#include <system_error>

#include "os/child_process.h"
#include "sqlite/connection.h"
#include "sqlite/database_setup.h"
#include "sqlite/error.h"
#include "sqlite/journal_files.h"
#include "sqlite/schema.h"
#include "sqlite/side_store.h"
#include "sqlite/statement.h"
#include "support.h"

namespace database_test {

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

namespace {

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

int64_t SynchronousLevel(Connection& c) {
  Statement q = c.Prepare("PRAGMA synchronous");
  q.Step();
  return q.ColumnInt(0);
}

}  // namespace

// Mutations caught: Connect() no longer turning the close checkpoint off on a temporary
// database (the log is checkpointed and deleted), SetUpWithoutFsync no longer
// checkpointing (the next lesson would find the last one's log), a kept database left
// with its log at close, or a lesson's connection given another synchronous level.
TEST_CASE("a temporary database's lesson connections leave the log, set-up restarts it",
          "[database]") {
  DatabaseSettings settings{.journal = JournalMode::kWal, .synchronous = Synchronous::kFull};
  DatabaseFile db = DatabaseFile::CreateTemporary(settings);
  const std::string wal = db.path() + "-wal";
  {
    Connection lesson = db.Connect();
    CHECK(SynchronousLevel(lesson) == 2);  // FULL, as asked: the lesson's own commits
    ResetInventory(lesson, {"b", "Dune", 10, 0});
  }
  // The last connection closed without a checkpoint: the log keeps its commit frames.
  REQUIRE(Exists(wal));
  CHECK(ReadWal(wal).commits > 0);
  {
    Connection next = db.Connect();  // reads the log: the row is there
    CHECK(ReadStock(next, "b").title == "Dune");
  }
  const WalFile before = ReadWal(wal);
  {
    Connection setup = db.Connect();  // as a restock does
    SetUpWithoutFsync(setup, db.temporary());
    CHECK(SynchronousLevel(setup) == 0);
    ResetInventory(setup, {"c", "Emma", 5, 0});
  }
  // The set-up checkpointed the log and its writes started a new one (new salts): the
  // next lesson finds only the set-up's frames.
  const WalFile after_setup = ReadWal(wal);
  REQUIRE(after_setup.header_valid);
  CHECK((after_setup.salt1 != before.salt1 || after_setup.salt2 != before.salt2));
  Connection after = db.Connect();
  CHECK(ReadStock(after, "c").title == "Emma");
}

// Mutations caught: ResetInventory clearing every table whatever it holds (a frame in the
// log for each empty one: the quiet restock's frames would reach the table count and the
// busy one would add none), or leaving a table that holds rows.
TEST_CASE("a restock clears only the tables that hold rows, and logs no frame for the others",
          "[database]") {
  DatabaseFile db = DatabaseFile::CreateTemporary({});
  const std::string wal = db.path() + "-wal";
  auto restock = [&](const StockItem& item) {
    Connection setup = db.Connect();
    SetUpWithoutFsync(setup, db.temporary());  // a new log: only this restock's frames
    ResetInventory(setup, item);
  };
  restock({"b", "Dune", 10, 0});
  restock({"c", "Emma", 5, 0});  // every table empty but StockItems
  const int64_t quiet = ReadWal(wal).valid_frames;
  CHECK(quiet > 0);
  CHECK(quiet < 7);  // fewer than the tables
  {
    Connection lesson = db.Connect();
    lesson.ExecScript(
        "INSERT INTO Inbox (MessageId, Consumer, ReceivedAt) VALUES ('m', 'c', 't');"
        "INSERT INTO AuditLog (OrderId, Entry, At) VALUES ('o', 'e', 't')");
  }
  restock({"d", "Dune", 10, 0});
  CHECK(ReadWal(wal).valid_frames == quiet + 2);  // the two cleared tables' root pages
  Connection c = db.Connect();
  CHECK(CountRows(c, "Inbox") == 0);
  CHECK(CountRows(c, "AuditLog") == 0);
  CHECK(CountRows(c, "StockItems") == 1);
  CHECK(ReadStock(c, "d").title == "Dune");
}

TEST_CASE("a kept database's connections checkpoint when the last one closes", "[database]") {
  TempDir dir;
  const std::string path = dir.File("shop.db");
  DatabaseFile db = DatabaseFile::Open(path, {});
  {
    Connection c = db.Connect();
    ResetInventory(c, {"b", "Dune", 10, 0});
    CHECK(Exists(path + "-wal"));
  }
  CHECK_FALSE(Exists(path + "-wal"));
}

TEST_CASE("files that are not dedupsim databases are refused and left as they were", "[database]") {
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

namespace {

// File descriptors of this process open on path (as /proc/self/fd shows them).
int OpenDescriptorsOn(const std::string& path) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    if (std::filesystem::read_symlink(entry.path(), error) == path) count++;
  }
  return count;
}

}  // namespace

// Mutations caught: CreateTemporary ignoring kKeep (no -shm descriptor between lessons'
// connections: each would rebuild the index), the kept connection not closed before fork
// (pthread_atfork handler removed: a child would inherit SQLite's locks), a read-back
// reopening it after a fork (dedupsim's connection, not the lesson's, would recover what
// a dead child left), or a set-up not reopening it.
TEST_CASE("a kept set-up connection holds the log's index between lessons, and never across fork",
          "[database]") {
  DatabaseFile db = DatabaseFile::CreateTemporary({}, SetUpConnection::kKeep);
  const std::string shm = db.path() + "-shm";
  db.WithSetUpConnection([](Connection& c) { ResetInventory(c, {"b", "Dune", 10, 0}); });
  {
    Connection lesson = db.Connect();
    CHECK(ReadStock(lesson, "b").on_hand == 10);
  }
  CHECK(OpenDescriptorsOn(shm) == 1);  // the kept connection's, with no lesson open
  StockItem read;
  db.WithReadConnection([&](Connection& c) { read = ReadStock(c, "b"); });
  CHECK(read.title == "Dune");

  const pid_t pid = ForkChild();
  if (pid == 0) ::_exit(OpenDescriptorsOn(db.path()) == 0 && OpenDescriptorsOn(shm) == 0 ? 0 : 1);
  int status = 0;
  WaitChild(pid, &status);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));  // the child inherited nothing
  CHECK(OpenDescriptorsOn(shm) == 0);                      // closed in the parent too

  db.WithReadConnection([&](Connection& c) { read = ReadStock(c, "b"); });
  CHECK(read.on_hand == 10);
  CHECK(OpenDescriptorsOn(shm) == 0);  // a read-back does not reopen it
  db.WithSetUpConnection([](Connection& c) { ResetInventory(c, {"c", "Emma", 5, 0}); });
  CHECK(OpenDescriptorsOn(shm) == 1);  // the next set-up does
}

// Mutation caught: a temporary database made without kKeep keeping a connection anyway.
TEST_CASE("without kKeep a temporary database keeps no connection", "[database]") {
  DatabaseFile db = DatabaseFile::CreateTemporary({});
  db.WithSetUpConnection([](Connection& c) { ResetInventory(c, {"b", "Dune", 10, 0}); });
  CHECK(OpenDescriptorsOn(db.path()) == 0);
  CHECK(OpenDescriptorsOn(db.path() + "-shm") == 0);
}

// Mutations caught: the store's creating connection closed instead of kept (no -shm
// descriptor with no lesson connection open: each lesson connection would rebuild the
// index), the kept one not handed over by a move (it would close with the moved-from
// store), or not closed before fork (a child would inherit SQLite's locks).
TEST_CASE("a side store keeps its creating connection open, idle, and never across fork",
          "[database]") {
  DatabaseFile db = DatabaseFile::CreateTemporary({});
  const std::string path = db.path() + ".cache";
  const std::string shm = path + "-shm";
  {
    std::optional<SideStoreFile> made;
    made.emplace(SideStoreFile::CreateNextTo(db, ".cache", "CREATE TABLE k (a)"));
    SideStoreFile moved(std::move(*made));
    made.reset();  // the moved-from store is destroyed, as after a return
    CHECK(OpenDescriptorsOn(shm) == 1);
    {
      Connection lesson = moved.Connect();
      lesson.Exec("INSERT INTO k (a) VALUES (1)");
    }
    CHECK(OpenDescriptorsOn(shm) == 1);  // the kept one, with no lesson open

    const pid_t pid = ForkChild();
    if (pid == 0) ::_exit(OpenDescriptorsOn(path) == 0 && OpenDescriptorsOn(shm) == 0 ? 0 : 1);
    int status = 0;
    WaitChild(pid, &status);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));  // the child inherited nothing
    CHECK(OpenDescriptorsOn(shm) == 0);                      // closed in the parent too
    Connection after = moved.Connect();
    CHECK(after.Prepare("SELECT count(*) FROM k").Step());
  }
  CHECK(OpenDescriptorsOn(path) == 0);
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK_FALSE(std::filesystem::exists(shm));
}

}  // namespace database_test
