// What a dead process left beside the database, read from the bytes of the WAL or the
// rollback journal (lib/sqlite/journal_files.h), and the recover note built from them.
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "consumers/naive.h"
#include "lesson/crash.h"
#include "sqlite/journal_files.h"
#include "sqlite/schema.h"
#include "sqlite/store.h"
#include "sqlite/transaction.h"
#include "support.h"

namespace recovery_test {

using namespace dedupsim;
using dedupsim::testing::CliResult;
using dedupsim::testing::Fixture;
using dedupsim::testing::RunCli;
using dedupsim::testing::TempDir;

namespace {

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A child that commits `commits` stock updates, then (open) begins one more and writes in
// it, then is killed at its crash point. Returns the recover note and the Reserved total
// the next open sees.
struct Death {
  std::string note;
  int64_t reserved = -1;
};

Death KillAfter(DatabaseSettings settings, int commits, bool open) {
  RunOptions o;
  o.crash_mode = CrashMode::kKill;
  Fixture fx(o, settings);
  StockItem dune{fx.ids.Next(), "Dune", 10, 0};
  {
    Connection c = fx.db.Connect();
    ResetInventory(c, dune);
  }
  OrderPlaced m{fx.ids.Next(), fx.ids.Next(), dune.book_id, 1};
  CrashReport report = RunCrashingDelivery(fx.env, "A", "Here", [&](const Hook& crash) {
    Connection db = fx.db.Connect();
    SqliteStore store(db);
    for (int i = 0; i < commits; ++i) {
      Transaction tx(db);
      AddReserved(store, m);
      tx.Commit();
    }
    if (open) {
      Transaction tx(db);
      AddReserved(store, m);
      crash();
    }
    crash();
  });
  REQUIRE(report.crashed);
  Death d;
  for (const TraceEvent& e : fx.recorder.Events()) {
    if (e.kind == "recover") d.note += e.detail + "\n";  // what was on disk, then the open's
  }
  Connection c = fx.db.Connect();
  d.reserved = ReadStock(c, dune.book_id).reserved;
  return d;
}

const DatabaseSettings kWal{.journal = JournalMode::kWal};
const DatabaseSettings kJournal{.journal = JournalMode::kDelete};

}  // namespace

// Mutation caught: the fixed "wrote no commit frame" sentence, or commit frames counted
// without the fork-time baseline / without the db-size field.
TEST_CASE("WAL: the recover note counts the dead process's commit frames", "[recovery]") {
  Death none = KillAfter(kWal, 0, true);
  INFO(none.note);
  CHECK((Has(none.note,
             "wrote 0 commit frames since it started, so the first open after it sees none of its work") ||
         Has(none.note, "empty WAL: no frame of pid")));
  CHECK(none.reserved == 0);

  Death committed = KillAfter(kWal, 1, false);
  INFO(committed.note);
  CHECK(Has(committed.note,
            "wrote 1 commit frame since it started, so the first open after it sees 1 committed transaction "
            "of its work"));
  CHECK(committed.reserved == 1);

  Death mid = KillAfter(kWal, 2, true);
  INFO(mid.note);
  CHECK(Has(mid.note,
            "wrote 2 commit frames since it started, so the first open after it sees 2 committed "
            "transactions of its work"));
  CHECK(mid.reserved == 2);
}

// Mutation caught: a journal called hot without reading its first byte, or "nothing to
// recover" printed while a journal is there.
TEST_CASE("rollback journal: hot or not, read from the header", "[recovery]") {
  Death none = KillAfter(kJournal, 0, true);
  INFO(none.note);
  CHECK(Has(none.note,
            "is not hot"));  // synchronous on: the header is finished only before the db changes
  CHECK(none.reserved == 0);

  Death committed = KillAfter(kJournal, 1, false);
  INFO(committed.note);
  CHECK(Has(committed.note, "no rollback journal"));
  CHECK(committed.reserved == 1);

  Death mid = KillAfter(kJournal, 1, true);
  INFO(mid.note);
  CHECK(Has(mid.note, "is not hot"));
  CHECK(mid.reserved == 1);

  // synchronous=OFF writes the header at once: the journal is hot and rolled back.
  Death hot = KillAfter(
      DatabaseSettings{.journal = JournalMode::kDelete, .synchronous = Synchronous::kOff}, 1, true);
  INFO(hot.note);
  CHECK(Has(hot.note, "hot journal of"));
  CHECK(Has(hot.note, "rolled back"));
  CHECK(hot.reserved == 1);
}

// Mutation caught: frames after the last commit frame counted as committed, or the salt or
// checksum test dropped.
TEST_CASE("ReadWal: commit frames, an uncommitted tail, and a broken checksum", "[recovery]") {
  TempDir dir;
  std::string path = dir.File("w.db");
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  auto exec = [&](const char* sql) {
    REQUIRE(sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK);
  };
  exec("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; PRAGMA cache_size=2;");
  exec("CREATE TABLE t(x BLOB)");
  exec("INSERT INTO t VALUES (randomblob(100))");
  WalFile two = ReadWal(path + "-wal");
  CHECK(two.header_valid);
  CHECK(two.commits == 2);
  CHECK(two.tail_frames == 0);
  // A transaction larger than the cache spills frames into the log before its commit.
  exec("BEGIN");
  exec(
      "INSERT INTO t SELECT randomblob(3000) FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL "
      "SELECT i+1 FROM n WHERE i<40) SELECT i FROM n)");
  std::filesystem::copy_file(path + "-wal", dir.File("copy-wal"));
  exec("ROLLBACK");
  sqlite3_close(db);
  WalFile spilled = ReadWal(dir.File("copy-wal"));
  CHECK(spilled.commits == 2);
  CHECK(spilled.tail_frames > 0);
  CHECK(TailSince(spilled, two) == spilled.tail_frames);
  CHECK(CommitsSince(spilled, two) == 0);

  // One flipped byte in the first frame's page: the checksum chain stops there.
  std::string bytes = dedupsim::testing::ReadFile(dir.File("copy-wal"));
  bytes[32 + 24 + 100] = static_cast<char>(bytes[32 + 24 + 100] ^ 0x5a);
  dedupsim::testing::WriteFile(dir.File("broken-wal"), bytes);
  WalFile broken = ReadWal(dir.File("broken-wal"));
  CHECK(broken.header_valid);
  CHECK(broken.valid_frames == 0);
  CHECK(broken.commits == 0);
}

// The reproduction: check-then-process's stock update committed before the kill.
TEST_CASE("check-then-process --crash-mode kill reports the committed stock update",
          "[recovery][cli]") {
  CliResult r = RunCli({"run", "check-then-process", "--crash-mode", "kill", "--trace"});
  CHECK(r.exit_code == 0);
  INFO(r.err);
  CHECK(Has(r.err, "so the first open after it sees 1 committed transaction of its work"));
  CHECK_FALSE(Has(r.err, "wrote no commit frame"));
}

}  // namespace recovery_test

namespace recovery_test {

// hung-consumer's notes are read from the child's wait status, not written in: a child
// that exited is said to have exited. Mutation caught: HowItEnded returning "killed by
// SIGKILL" whatever the status (as the four notes did).
TEST_CASE("a child's end is said from its wait status", "[recovery][crash]") {
  auto status_of = [](bool kill_it) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      if (kill_it) pause();
      _exit(3);
    }
    if (kill_it) ::kill(pid, SIGKILL);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    return status;
  };
  CHECK(ChildAtHook::HowItEnded(status_of(true)) == "killed by SIGKILL");
  CHECK(ChildAtHook::HowItEnded(status_of(false)) == "exited with status 3");
}

}  // namespace recovery_test
