// The SQLite layer: result codes, transactions rolled back on destruction, duplicate keys
// as values, the busy handler's counters, and the database file checks.
#include <catch2/catch.hpp>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "os/child_process.h"
#include "os/pipe_io.h"
#include "os/this_pid.h"
#include "sqlite/connection.h"
#include "sqlite/database.h"
#include "sqlite/error.h"
#include "sqlite/schema.h"
#include "sqlite/statement.h"
#include "sqlite/transaction.h"
#include "support.h"
#include "trace/trace.h"

namespace sqlite_test {

using namespace dedupsim;
using dedupsim::testing::TempDir;

namespace {

Connection OpenScratch(const std::string& path) {
  ConnectionOptions options;
  options.create = true;
  Connection c(path, options);
  c.ExecScript("CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, u TEXT UNIQUE, v INTEGER)");
  return c;
}

int64_t Count(Connection& c) {
  Statement q = c.Prepare("SELECT count(*) FROM t");
  q.Step();
  return q.ColumnInt(0);
}

// A temporary database with the schema and Dune stocked, for the lock hand-over tests.
DatabaseFile StockedTemporary() {
  DatabaseFile db = DatabaseFile::CreateTemporary({});
  Connection setup = db.Connect();
  ResetInventory(setup, {"b", "Dune", 10, 0});
  return db;
}

// Connections A and B on a stocked temporary database, traced into one recorder with their
// lock histories kept.
struct TracedPair {
  TracedPair() {
    for (auto [c, name] : {std::pair{&a, "A"}, std::pair{&b, "B"}}) {
      c->SetTrace(&recorder, name);
      c->KeepLockHistory();
    }
  }
  DatabaseFile db = StockedTemporary();
  Recorder recorder;
  Connection a = db.Connect();
  Connection b = db.Connect();
};

// The index of the first event of instance with kind whose detail starts with detail
// (events.size() and a failed test if there is none).
size_t IndexOf(const std::vector<TraceEvent>& events, const std::string& instance,
               const std::string& kind, const std::string& detail) {
  for (size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    if (e.instance == instance && e.kind == kind && e.detail.rfind(detail, 0) == 0) return i;
  }
  FAIL("no event " << instance << " " << kind << " " << detail);
  return events.size();
}

}  // namespace

TEST_CASE("the result codes mirror sqlite3.h", "[sqlite]") {
  CHECK(kSqliteBusy == SQLITE_BUSY);
  CHECK(kSqliteConstraintPrimaryKey == SQLITE_CONSTRAINT_PRIMARYKEY);
  CHECK(kSqliteConstraintUnique == SQLITE_CONSTRAINT_UNIQUE);
  CHECK(IsDuplicateKeyCode(1555));
  CHECK(IsDuplicateKeyCode(2067));
  CHECK_FALSE(IsDuplicateKeyCode(SQLITE_CONSTRAINT_NOTNULL));
  CHECK_FALSE(IsDuplicateKeyCode(SQLITE_BUSY));
}

TEST_CASE("a duplicate primary key is a value, with extended code 1555", "[sqlite]") {
  TempDir dir;
  Connection c = OpenScratch(dir.File("t.db"));
  Statement insert = c.Prepare("INSERT INTO t (k, u, v) VALUES (?1, ?2, 1)");
  CHECK(insert.Bind(1, "a").Bind(2, "x").ExecuteInsert() == InsertResult::kInserted);
  CHECK(insert.Bind(1, "a").Bind(2, "y").ExecuteInsert() == InsertResult::kDuplicateKey);
  CHECK(insert.last_code() == 1555);
  CHECK(Count(c) == 1);
}

TEST_CASE("a duplicate unique key is a value, with extended code 2067", "[sqlite]") {
  TempDir dir;
  Connection c = OpenScratch(dir.File("t.db"));
  Statement insert = c.Prepare("INSERT INTO t (k, u, v) VALUES (?1, ?2, 1)");
  insert.Bind(1, "a").Bind(2, "x").ExecuteInsert();
  CHECK(insert.Bind(1, "b").Bind(2, "x").ExecuteInsert() == InsertResult::kDuplicateKey);
  CHECK(insert.last_code() == 2067);
}

TEST_CASE("other constraint errors throw SqliteError with their extended code", "[sqlite]") {
  TempDir dir;
  ConnectionOptions options;
  options.create = true;
  Connection c(dir.File("t.db"), options);
  c.ExecScript("CREATE TABLE n (k TEXT NOT NULL)");
  Statement insert = c.Prepare("INSERT INTO n (k) VALUES (NULL)");
  try {
    insert.ExecuteInsert();
    FAIL("no error");
  } catch (const SqliteError& e) {
    CHECK(e.code() == SQLITE_CONSTRAINT_NOTNULL);
    CHECK_FALSE(e.IsDuplicateKey());
  }
}

TEST_CASE("a constraint error ends the statement, not the transaction", "[sqlite]") {
  TempDir dir;
  Connection c = OpenScratch(dir.File("t.db"));
  Transaction tx(c);
  c.Exec("INSERT INTO t (k, u, v) VALUES ('a', 'x', 1)");
  CHECK(c.Prepare("INSERT INTO t (k, u, v) VALUES ('a', 'y', 2)").ExecuteInsert() ==
        InsertResult::kDuplicateKey);
  CHECK(c.InTransaction());
  c.Exec("INSERT INTO t (k, u, v) VALUES ('b', 'z', 3)");
  tx.Commit();
  CHECK(Count(c) == 2);
}

TEST_CASE("a transaction rolls back in its destructor unless committed", "[sqlite]") {
  TempDir dir;
  Connection c = OpenScratch(dir.File("t.db"));
  {
    Transaction tx(c);
    c.Exec("INSERT INTO t (k, u, v) VALUES ('a', 'x', 1)");
    CHECK(tx.state() == Transaction::State::kActive);
  }
  CHECK_FALSE(c.InTransaction());
  CHECK(Count(c) == 0);
  {
    Transaction tx(c, TransactionKind::kImmediate);
    c.Exec("INSERT INTO t (k, u, v) VALUES ('a', 'x', 1)");
    tx.Commit();
    CHECK(tx.state() == Transaction::State::kCommitted);
  }
  CHECK(Count(c) == 1);
}

TEST_CASE("an explicit rollback is tracked and not repeated", "[sqlite]") {
  TempDir dir;
  Connection c = OpenScratch(dir.File("t.db"));
  {
    Transaction tx(c);
    c.Exec("INSERT INTO t (k, u, v) VALUES ('a', 'x', 1)");
    tx.Rollback();
    CHECK(tx.state() == Transaction::State::kRolledBack);
    // A new transaction on the same connection is not touched by the old one's destructor.
    c.Exec("BEGIN");
    c.Exec("INSERT INTO t (k, u, v) VALUES ('b', 'y', 1)");
  }
  CHECK(c.InTransaction());
  c.Exec("COMMIT");
  CHECK(Count(c) == 1);
  Transaction done(c);
  done.Commit();
  CHECK_THROWS_AS(done.Commit(), DatabaseError);
}

TEST_CASE("closing a connection mid-transaction commits nothing", "[sqlite]") {
  TempDir dir;
  std::string path = dir.File("t.db");
  Connection c = OpenScratch(path);
  c.Exec("BEGIN");
  c.Exec("INSERT INTO t (k, u, v) VALUES ('a', 'x', 1)");
  c.Close();
  CHECK_FALSE(c.is_open());
  CHECK_THROWS_AS(c.Exec("SELECT 1"), DatabaseError);
  Connection again = OpenScratch(path);
  CHECK(Count(again) == 0);
}

TEST_CASE("a second writer waits in the busy handler, which counts and times the wait",
          "[sqlite]") {
  TempDir dir;
  std::string path = dir.File("t.db");
  Connection first = OpenScratch(path);
  first.ExecScript("PRAGMA journal_mode=WAL");
  Connection second = OpenScratch(path);
  first.Exec("BEGIN IMMEDIATE");
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    first.Exec("COMMIT");
  });
  second.Exec("INSERT INTO t (k, u, v) VALUES ('a', 'x', 1)");  // waits for the lock
  release.join();
  BusyStats busy = second.busy();
  CHECK(busy.calls > 0);
  CHECK(busy.waited >= std::chrono::milliseconds(100));
  CHECK(first.busy().calls == 0);
}

TEST_CASE("a busy timeout of zero fails at once with SQLITE_BUSY", "[sqlite]") {
  TempDir dir;
  std::string path = dir.File("t.db");
  Connection first = OpenScratch(path);
  ConnectionOptions options;
  options.busy_timeout = std::chrono::milliseconds(0);
  Connection second(path, options);
  first.Exec("BEGIN IMMEDIATE");
  try {
    second.Exec("BEGIN IMMEDIATE");
    FAIL("no error");
  } catch (const SqliteError& e) {
    CHECK(e.IsBusy());
  }
  first.Exec("ROLLBACK");
}

TEST_CASE("a deferred read-then-write transaction fails at once without waiting (WAL)",
          "[sqlite]") {
  TempDir dir;
  std::string path = dir.File("t.db");
  Connection writer = OpenScratch(path);
  writer.ExecScript("PRAGMA journal_mode=WAL");
  Connection reader = OpenScratch(path);
  reader.Exec("BEGIN");
  CHECK(Count(reader) == 0);  // the read starts a snapshot
  writer.Exec("INSERT INTO t (k, u, v) VALUES ('a', 'x', 1)");  // another commit moves on
  try {
    reader.Exec("INSERT INTO t (k, u, v) VALUES ('b', 'y', 1)");
    FAIL("no error");
  } catch (const SqliteError& e) {
    CHECK(e.IsBusy());  // SQLITE_BUSY_SNAPSHOT: waiting cannot help, so it does not wait
  }
  CHECK(reader.busy().calls == 0);
  reader.Exec("ROLLBACK");
}

TEST_CASE("statements on a traced connection are recorded with their results", "[sqlite]") {
  TempDir dir;
  Connection c = OpenScratch(dir.File("t.db"));
  Recorder recorder;
  c.SetTrace(&recorder, "A");
  c.Exec("INSERT INTO t (k, u, v) VALUES ('a', 'x', 1)");
  c.Prepare("INSERT INTO t (k, u, v) VALUES ('a', 'y', 1)").ExecuteInsert();
  auto events = recorder.Events();
  REQUIRE(events.size() == 2);
  CHECK(events[0].instance == "A");
  CHECK(events[0].kind == "sql");
  CHECK(events[0].result == "ok");
  CHECK(events[1].result == "constraint 1555");
  CHECK(events[1].detail.find("INSERT INTO t") == 0);
}

// Each connection stamps its lock notes when its own step returns. SQLite calls the WAL hook
// after a commit, with the write lock already released: a second connection taking the lock
// there is what a thread preempted between the release and its stamp looks like. The trace
// must still draw A's release (and its COMMIT) before B's take.
TEST_CASE("a release is stamped before the next connection's take, however late its thread",
          "[sqlite][trace]") {
  TracedPair pair;
  Recorder& recorder = pair.recorder;
  Connection& a = pair.a;
  Connection& b = pair.b;
  struct Late {
    Connection* next;
    bool took = false;
  } late{&b};
  sqlite3_wal_hook(
      a.handle(),
      [](void* arg, sqlite3*, const char*, int) -> int {
        auto* l = static_cast<Late*>(arg);
        if (!l->took) {
          l->took = true;
          l->next->Exec("BEGIN IMMEDIATE");
        }
        return SQLITE_OK;
      },
      &late);
  a.Exec("BEGIN IMMEDIATE");
  a.Exec("UPDATE StockItems SET Reserved = Reserved + 1");
  a.Exec("COMMIT");
  REQUIRE(late.took);
  b.Exec("ROLLBACK");

  std::vector<TraceEvent> events = recorder.Events();
  const size_t released = IndexOf(events, "A", "lock", "write lock released");
  const size_t commit = IndexOf(events, "A", "sql", "COMMIT");
  const size_t taken = IndexOf(events, "B", "lock", "write lock taken");
  CHECK(events[released].at_us < events[taken].at_us);
  CHECK(events[commit].at_us < events[taken].at_us);
  CHECK(released < taken);
  CHECK(commit < taken);
}

// The other side of that window: A's thread is preempted after its step stamped the release
// (now, no take yet) but before the statement's own event is stamped. The recorder's
// observer runs in A's thread right after the release note, so it stands for that
// preemption: B takes the lock there (in its own thread; A's observer waits until B's take
// is recorded). A's ROLLBACK must still be stamped at its release, before B's take: stamped
// when its thread came back, it would be drawn after B's steps (seen at load 10: B's INSERT
// drawn after B's own COMMIT in concurrent-rollback's diagram).
TEST_CASE("a release step's statement is stamped at the release and not when its thread returns",
          "[sqlite][trace]") {
  TracedPair pair;
  Recorder& recorder = pair.recorder;
  Connection& a = pair.a;
  Connection& b = pair.b;
  auto has = [&](const std::string& instance, const std::string& kind, const std::string& detail) {
    for (const TraceEvent& e : recorder.Events()) {
      if (e.instance == instance && e.kind == kind && e.detail.rfind(detail, 0) == 0) return true;
    }
    return false;
  };
  std::thread next;
  bool asked = false;  // both only in the observer, whose calls one mutex serializes
  bool took = false;
  recorder.SetObserver([&](const TraceEvent& e) {
    if (e.instance != "A" || e.detail != "write lock released" || asked) return;
    asked = true;
    next = std::thread([&b] { b.Exec("BEGIN IMMEDIATE"); });
    // B's take is recorded before B's observer call, which waits for this one to return.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!(took = has("B", "lock", "write lock taken")) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  a.Exec("BEGIN IMMEDIATE");
  a.Exec("UPDATE StockItems SET Reserved = Reserved + 1");
  a.Exec("ROLLBACK");
  REQUIRE(next.joinable());
  next.join();
  recorder.SetObserver(nullptr);
  REQUIRE(took);
  b.Exec("ROLLBACK");

  std::vector<TraceEvent> events = recorder.Events();
  const size_t released = IndexOf(events, "A", "lock", "write lock released");
  const size_t rollback = IndexOf(events, "A", "sql", "ROLLBACK");
  const size_t taken = IndexOf(events, "B", "lock", "write lock taken");
  const size_t begin = IndexOf(events, "B", "sql", "BEGIN");
  CHECK(events[released].at_us < events[taken].at_us);
  CHECK(events[rollback].at_us <= events[released].at_us);
  CHECK(events[rollback].at_us < events[taken].at_us);
  CHECK(rollback < taken);
  CHECK(rollback < begin);
}

// The same hand-over across a fork (--instances processes): each process stamps its own
// notes, so the release's clamp needs the other process's take. A's WAL hook, inside its
// COMMIT after SQLite released the lock, lets a forked child take the lock and waits until
// the child has stamped its take; only then does A's step return and stamp its release.
TEST_CASE("a release is stamped before a forked process's take, however late its thread",
          "[sqlite][trace]") {
  DatabaseFile db = StockedTemporary();
  Recorder recorder;  // before the fork: the child shares its table of lock takes
  int go[2];
  int took[2];
  REQUIRE(::pipe(go) == 0);
  REQUIRE(::pipe(took) == 0);
  const pid_t child = ForkChild();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(go[1]);
    ::close(took[0]);
    int code = 1;
    try {
      Connection b = db.Connect();
      b.SetTrace(&recorder, "B");
      b.KeepLockHistory();
      if (WaitReadable(go[0], std::chrono::seconds(30))) {
        b.Exec("BEGIN IMMEDIATE");
        for (const TraceEvent& e : recorder.Events()) {
          if (e.instance == "B" && e.detail == "write lock taken") {
            WriteAll(took[1], std::to_string(e.at_us) + "\n");
            code = 0;
          }
        }
        b.Exec("ROLLBACK");
      }
    } catch (...) {
      code = 2;
    }
    ::_exit(code);
  }
  ::close(go[0]);
  ::close(took[1]);
  Connection a = db.Connect();
  a.SetTrace(&recorder, "A");
  a.KeepLockHistory();
  struct Late {
    int go;
    int took;
    bool asked = false;
    std::string taken;  // the child's stamp of its take, in the recorder's microseconds
  } late{go[1], took[0], false, {}};
  sqlite3_wal_hook(
      a.handle(),
      [](void* arg, sqlite3*, const char*, int) -> int {
        auto* l = static_cast<Late*>(arg);
        if (!l->asked) {
          l->asked = true;
          WriteAll(l->go, "g");
          l->taken = ReadLine(l->took);  // EOF if the child failed
        }
        return SQLITE_OK;
      },
      &late);
  a.Exec("BEGIN IMMEDIATE");
  a.Exec("UPDATE StockItems SET Reserved = Reserved + 1");
  a.Exec("COMMIT");
  ::close(go[1]);
  ::close(took[0]);
  int status = 0;
  WaitChild(child, &status);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE_FALSE(late.taken.empty());
  const int64_t taken = std::stoll(late.taken);

  const std::vector<TraceEvent> events = recorder.Events();
  auto find = [&](const std::string& kind, const std::string& detail) {
    const size_t i = IndexOf(events, "A", kind, detail);
    return i < events.size() ? events[i].at_us : int64_t{0};
  };
  CHECK(find("lock", "write lock released") < taken);
  CHECK(find("sql", "COMMIT") < taken);
}

// Events carry the pid of the process that recorded them. The pid ThisPid keeps is
// forgotten in a forked child, which reads its own.
// Whoever is told that a connection blocked (hung-consumer kills the holder then, the
// concurrent lessons let it commit) acts after the wait is on the trace: what it does next
// is drawn after the wait, however the threads are scheduled. Mutation caught: the
// listener called before the "wait" event is recorded (as it was: hung-consumer's
// diagram drew A's death before B's wait in 16 of 20 runs at load 9).
TEST_CASE("a wait is on the trace before the connection tells anyone it blocked",
          "[sqlite][trace]") {
  TracedPair pair;
  pair.b.SetBusyTimeout(std::chrono::seconds(10));
  int told = 0;
  bool wait_recorded_when_told = false;
  pair.b.OnBlocked([&] {
    ++told;
    for (const TraceEvent& e : pair.recorder.Events()) {
      if (e.instance == "B" && e.kind == "wait") wait_recorded_when_told = true;
    }
    pair.a.Exec("COMMIT");  // what the listener does: ends the holder's transaction
  });
  pair.a.Exec("BEGIN IMMEDIATE");
  pair.b.Exec("UPDATE StockItems SET Reserved = Reserved + 1");
  CHECK(told == 1);
  CHECK(wait_recorded_when_told);
  const std::vector<TraceEvent> events = pair.recorder.Events();
  CHECK(IndexOf(events, "B", "wait", "write lock held") < IndexOf(events, "A", "sql", "COMMIT"));
}

TEST_CASE("a forked child stamps its events with its own pid", "[sqlite][trace]") {
  Recorder recorder;
  recorder.Note("A", "note", "parent", "");
  const int parent = ThisPid();
  REQUIRE(parent == static_cast<int>(::getpid()));
  int report[2];
  REQUIRE(::pipe(report) == 0);
  const pid_t child = ForkChild();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(report[0]);
    recorder.Note("B", "note", "child", "");
    const std::vector<TraceEvent> events = recorder.Events();
    WriteAll(report[1],
             std::to_string(events.back().pid) + " " + std::to_string(::getpid()) + "\n");
    ::_exit(0);
  }
  ::close(report[1]);
  const std::string line = ReadLine(report[0]);
  ::close(report[0]);
  int status = 0;
  WaitChild(child, &status);
  REQUIRE(WIFEXITED(status));
  const size_t space = line.find(' ');
  REQUIRE(space != std::string::npos);
  const int stamped = std::stoi(line.substr(0, space));
  const int real = std::stoi(line.substr(space + 1));
  CHECK(real != parent);
  CHECK(stamped == real);
  CHECK(recorder.Events().front().pid == parent);
}

// A child's report is one line of a few kilobytes (ChildAtHook): ReadLine takes it whole,
// across more than one of its blocks, and stops at the newline; without one, at EOF.
TEST_CASE("ReadLine reads a long line whole and stops at its newline", "[sqlite][pipe]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const std::string line(10000, 'x');
  std::thread writer([&] {
    WriteAll(fds[1], line.substr(0, 5000));
    WriteAll(fds[1], line.substr(5000) + "\nafter");
    ::close(fds[1]);
  });
  CHECK(ReadLine(fds[0]) == line);
  writer.join();
  ::close(fds[0]);
  REQUIRE(::pipe(fds) == 0);
  WriteAll(fds[1], "no newline");
  ::close(fds[1]);
  CHECK(ReadLine(fds[0]) == "no newline");
  ::close(fds[0]);
}
}  // namespace sqlite_test
