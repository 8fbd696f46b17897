// The PostgreSQL backend, on the throwaway cluster the CTest fixture started (label
// `postgres`): the error funnel, the marked schema, and the lessons run end to end with
// their figures measured from the server's side. Each test works in its own schema. A test
// that cannot find the fixture's server fails; nothing is skipped.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "page_data.h"
#include "pg_support.h"
#include "postgres/connection.h"
#include "postgres/error.h"
#include "postgres/store.h"
#include "scenarios.h"
#include "store/error.h"
#include "support.h"
#include "trace/trace.h"

namespace dedupsim::postgres_test {
namespace {

using testing::Conninfo;
using testing::RunPg;

using testing::RunCli;
using testing::SplitLines;

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("the error funnel: SQLite and PostgreSQL codes are the same kinds", "[postgres]") {
  CHECK(ClassifySqliteCode(1555) == StoreErrorKind::kDuplicateKey);
  CHECK(ClassifySqliteCode(2067) == StoreErrorKind::kDuplicateKey);
  CHECK(ClassifySqlstate("23505") == StoreErrorKind::kDuplicateKey);
  CHECK(ClassifySqlstate("40001") == StoreErrorKind::kRetryable);
  CHECK(ClassifySqlstate("40P01") == StoreErrorKind::kRetryable);
  CHECK(ClassifySqlstate("25P02") == StoreErrorKind::kTransactionAborted);
  CHECK(ClassifySqliteCode(5) == StoreErrorKind::kBusy);
  CHECK(ClassifySqlstate("23503") == StoreErrorKind::kOther);  // a foreign key: not a duplicate
}

TEST_CASE("a duplicate key is a value, and after it the transaction is aborted (25P02)",
          "[postgres]") {
  PgDatabase db = PgDatabase::Open(Conninfo(), "t_funnel");
  PgBackend backend(db, Isolation::kReadCommitted);
  backend.ResetInventory(StockItem{"b-1", "Dune", 10, 0});
  PgStore store(db.Connect(), Isolation::kReadCommitted);
  TimePoint now{};
  REQUIRE(store.ClaimCompleted(InboxKey::kMessageIdAndConsumer, "m-1", "c", now) ==
          InsertResult::kInserted);
  store.Begin(TransactionKind::kDeferred);
  CHECK(store.ClaimCompleted(InboxKey::kMessageIdAndConsumer, "m-1", "c", now) ==
        InsertResult::kDuplicateKey);
  try {
    store.AddReserved("b-1", 2);
    FAIL("a statement after the duplicate key ran in an aborted transaction");
  } catch (const PgError& e) {
    CHECK(e.sqlstate() == "25P02");
    CHECK(e.kind() == StoreErrorKind::kTransactionAborted);
  }
  try {
    store.Commit();
    FAIL("COMMIT of an aborted transaction reported success");
  } catch (const PgError& e) {
    CHECK(e.sqlstate() == "25P02");
  }
  CHECK_FALSE(store.InTransaction());
  CHECK(backend.ReadStock("b-1").reserved == 0);
}

TEST_CASE("a schema dedupsim did not create is refused and left untouched", "[postgres]") {
  PgConnection raw(Conninfo());
  raw.ExecScript(
      "DROP SCHEMA IF EXISTS t_foreign CASCADE; CREATE SCHEMA t_foreign; "
      "CREATE TABLE t_foreign.StockItems (BookId text PRIMARY KEY, Reserved bigint); "
      "INSERT INTO t_foreign.StockItems VALUES ('mine', 7)");
  CHECK_THROWS_AS(PgDatabase::Open(Conninfo(), "t_foreign"), DatabaseError);
  testing::CliResult r = RunPg({"run", "naive"}, "t_foreign");
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("t_foreign") != std::string::npos);
  CHECK(r.out.empty());
  CHECK(raw.Exec("SELECT Reserved FROM t_foreign.StockItems WHERE BookId = 'mine'").Int(0, 0) == 7);
  CHECK(raw.Exec("SELECT count(*) FROM pg_tables WHERE schemaname = 't_foreign'").Int(0, 0) == 1);
}

TEST_CASE("a table dedupsim did not create in its own schema is refused", "[postgres]") {
  PgDatabase::Open(Conninfo(), "t_intruder");
  PgConnection raw(Conninfo());
  raw.ExecScript("DROP TABLE IF EXISTS t_intruder.Extra; CREATE TABLE t_intruder.Extra (x int)");
  CHECK_THROWS_AS(PgDatabase::Open(Conninfo(), "t_intruder"), DatabaseError);
  raw.ExecScript("DROP TABLE t_intruder.Extra");
  CHECK_NOTHROW(PgDatabase::Open(Conninfo(), "t_intruder"));
}

TEST_CASE("run all on PostgreSQL prints the same six lines as on SQLite", "[postgres]") {
  testing::CliResult sqlite = RunCli({"run", "all"});
  testing::CliResult pg = RunPg({"run", "all"}, "t_run_all");
  REQUIRE(sqlite.exit_code == 0);
  INFO(pg.err);
  REQUIRE(pg.exit_code == 0);
  CHECK(SplitLines(pg.out).size() == 6);
  CHECK(pg.out == sqlite.out);
}

TEST_CASE("run all --check holds on PostgreSQL, with the quantity changed", "[postgres]") {
  testing::CliResult pg = RunPg({"run", "all", "--check", "--quantity", "3"}, "t_check");
  INFO(pg.err);
  CHECK(pg.exit_code == 0);
  CHECK(pg.out.find("Dune reserved: 6") != std::string::npos);  // naive: 3 twice
}

// --check holds what the server does: row and key locks, so the order for another book does
// not wait (on SQLite it does: one writer per file). Mutation caught: the lesson's expectation
// for a server backend dropped (the SQLite one, "differentBooksSecondWaited is false, expected
// true", exit 1).
TEST_CASE("concurrent-different --check holds on PostgreSQL: the other book's order waits for nothing",
          "[postgres]") {
  testing::CliResult r = RunPg({"run", "concurrent-different", "--check", "--format", "json"},
                               "t_different_check");
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("check failed") == std::string::npos);
  nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["differentBooksSecondWaited"] == false);
}

TEST_CASE(
    "concurrent-different on PostgreSQL: B's INSERT does not wait, its UPDATE waits on Dune's row",
    "[postgres]") {
  testing::CliResult r = RunPg(
      {"run", "concurrent-different", "--format", "json", "--hold-ms", "400", "--stagger-ms", "50"},
      "t_different");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["processed"] == nlohmann::json({true, true}));
  CHECK(j["reserved"] == 4);
  CHECK(j["secondWaited"] == true);
  CHECK(j["waitedOn"] == "row StockItems");
  const auto& statements = j["secondStatements"];
  bool insert_seen = false, update_seen = false;
  for (const auto& s : statements) {
    std::string sql = s["sql"];
    if (sql.rfind("INSERT INTO Inbox", 0) == 0) {
      insert_seen = true;
      CHECK(s["waited"] == false);
    }
    if (sql.rfind("UPDATE StockItems", 0) == 0) {
      update_seen = true;
      CHECK(s["waited"] == true);
      CHECK(s["waitedOn"] == "row StockItems");
      CHECK(s["blockedBy"].size() == 1);
      CHECK(s["ms"].get<double>() > 0.0);
    }
  }
  CHECK(insert_seen);
  CHECK(update_seen);
  // The wait is said in the part it belongs to (issue 28, item 10: it came after the
  // different books' "waited for the first: False"). Mutation caught: the note appended at
  // the end of the line again.
  CHECK(j["line"].get<std::string>().find(
            "second waited for the first: True (on: row StockItems); different books") !=
        std::string::npos);
  CHECK(j["line"].get<std::string>().find("False; waited on") == std::string::npos);
  // Different books: no row in common, so on PostgreSQL B does not wait at all.
  CHECK(j["differentBooksProcessed"] == nlohmann::json({true, true}));
  CHECK(j["differentBooksReserved"] == nlohmann::json({2, 2}));
  CHECK(j["differentBooksSecondWaited"] == false);
}

TEST_CASE("concurrent on PostgreSQL: B's INSERT waits on A's key, then fails with 23505",
          "[postgres]") {
  testing::CliResult r =
      RunPg({"run", "concurrent", "--format", "json", "--hold-ms", "400", "--stagger-ms", "50"},
            "t_concurrent");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["processed"] == nlohmann::json({true, false}));
  CHECK(j["reserved"] == 2);
  CHECK(j["waitedOn"] == "key Inbox");
  bool insert_seen = false;
  for (const auto& s : j["secondStatements"]) {
    if (s["sql"].get<std::string>().rfind("INSERT INTO Inbox", 0) != 0) continue;
    insert_seen = true;
    CHECK(s["waited"] == true);
    CHECK(s["sqlstate"] == "23505");
  }
  CHECK(insert_seen);
  // B never reached the stock: the UPDATE is not among its statements.
  for (const auto& s : j["secondStatements"]) {
    CHECK(s["sql"].get<std::string>().rfind("UPDATE StockItems", 0) != 0);
  }
}

TEST_CASE(
    "concurrent-rollback on PostgreSQL: B's INSERT waits on A's key, A rolls back, B's "
    "INSERT succeeds and B processes",
    "[postgres]") {
  testing::CliResult r = RunPg({"run", "concurrent-rollback", "--format", "json", "--hold-ms",
                                "600", "--stagger-ms", "50", "--check"},
                               "t_rollback");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["processed"] == nlohmann::json({false, true}));
  CHECK(j["firstFailed"] == true);
  CHECK(j["inboxRows"] == 1);
  CHECK(j["reserved"] == 2);
  CHECK(j["waitedOn"] == "key Inbox");
  CHECK(Has(j["line"].get<std::string>(), "waited on: key Inbox"));
  std::vector<std::string> sequence;
  for (const auto& s : j["secondStatements"]) {
    const std::string sql = s["sql"];
    sequence.push_back(sql.substr(0, sql.find(' ')));
    if (sql.rfind("INSERT INTO Inbox", 0) == 0) {
      CHECK(s["waited"] == true);
      CHECK(s["waitEvent"] == "transactionid");
      CHECK(s["blockedBy"].size() == 1);
      CHECK_FALSE(s.contains("sqlstate"));  // no 23505: A's row went with its rollback
      // It waited for the rest of A's hold (600 ms minus B's 50 ms stagger); the bound
      // leaves room for B starting late on a loaded machine.
      CHECK(s["ms"].get<double>() >= 100.0);
    } else {
      CHECK(s["waited"] == false);
    }
  }
  // B went on past the claim: its stock update and its commit ran.
  CHECK(sequence == std::vector<std::string>{"BEGIN", "INSERT", "UPDATE", "COMMIT"});
}

TEST_CASE(
    "duplicate-in-transaction on PostgreSQL: 25P02 after a plain duplicate, not after a "
    "savepoint or ON CONFLICT, which waits and reports 0 rows",
    "[postgres]") {
  testing::CliResult r = RunPg({"run", "duplicate-in-transaction", "--format", "json", "--hold-ms",
                                "600", "--stagger-ms", "50", "--check"},
                               "t_dup_tx");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  // The plain claim's 23505 aborted the transaction: the read after it failed.
  CHECK(j["plainReadError"] == "25P02");
  CHECK(j["plainRowRead"] == false);
  CHECK(j["savepointReadError"] == "");
  CHECK(j["savepointRowRead"] == true);
  CHECK(j["onConflictReadError"] == "");
  CHECK(j["onConflictRowRead"] == true);
  CHECK(j["plainReserved"] == 2);
  CHECK(j["pairProcessed"] == nlohmann::json({true, false}));
  CHECK(j["pairWaitedOn"] == "key Inbox");
  CHECK(Has(j["line"].get<std::string>(),
            "plain insert: read failed: 25P02 (transaction-aborted); savepoint: row read; on "
            "conflict do nothing: row read"));
  bool insert_seen = false;
  for (const auto& s : j["pairSecondStatements"]) {
    if (!Has(s["sql"].get<std::string>(), "ON CONFLICT DO NOTHING")) continue;
    insert_seen = true;
    CHECK(s["waited"] == true);
    CHECK(s["waitedOn"] == "key Inbox");
    CHECK(s["ms"].get<double>() >= 100.0);
    CHECK(s["rows"] == 0);                // the duplicate, as a count
    CHECK_FALSE(s.contains("sqlstate"));  // and no error
  }
  CHECK(insert_seen);
}

// The views read a step's meaning from the event (trace.h), so a PostgreSQL step must carry
// what a SQLite step carries: its delivery, its op and table, and the consumer's outcome.
TEST_CASE("inbox on PostgreSQL: each step carries its delivery, op and table, and the outcomes",
          "[postgres]") {
  testing::CliResult r = RunPg({"run", "inbox", "--format", "json", "--trace"}, "t_trace");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  std::vector<std::string> outcomes;
  int inserts_of_second = 0;
  for (const auto& e : j["events"]) {
    if (e["actor"] != "consumer") continue;
    CHECK(e["delivery"].get<int>() >= 1);
    CHECK_FALSE(e["key"].get<std::string>().empty());
    if (e["kind"] == "outcome") outcomes.push_back(e["detail"]);
    if (e["kind"] == "sql" && e["op"] == "INSERT" && e["delivery"] == 2) {
      ++inserts_of_second;
      CHECK(e["table"] == "Inbox");
      CHECK(e["target"] == "database");
      CHECK(e["result"] == "sqlstate 23505");
    }
  }
  CHECK(outcomes == std::vector<std::string>{"Processed", "Skipped"});
  CHECK(inserts_of_second == 1);
}

TEST_CASE("backend options that do not fit are usage errors", "[postgres]") {
  CHECK(RunCli({"run", "naive", "--dsn", "host=/nonexistent"}).exit_code == 2);
  CHECK(RunCli({"run", "naive", "--isolation", "serializable"}).exit_code == 2);
  CHECK(RunCli({"run", "naive", "--backend", "postgres", "--db", "x.db"}).exit_code == 2);
  // A scenario not on the store seam yet (if any is left) is refused by name.
  for (const Scenario* s : AllScenarios()) {
    if ((s->traits & kAnyBackend) != 0) continue;
    testing::CliResult r = RunCli({"run", std::string(s->name), "--backend", "postgres"});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(std::string(s->name)) != std::string::npos);
    break;
  }
}

namespace {

// StockItems' Reserved as the page shows it after step i ("" when no table is shown).
std::string ReservedAt(const nlohmann::json& data, size_t i) {
  return testing::CellAfter(data, i, "database", "StockItems", "Reserved");
}

}  // namespace

// --html on PostgreSQL: the page's tables are read from the server after each step, as
// committed at that moment. crash-before-commit: the first delivery's UPDATE is not
// committed (Reserved still 0 on the page, also at the crash), the redelivery's COMMIT
// shows 2. Failed before (--html was refused on PostgreSQL, exit 2). Catches
// Backend::OpenTablesReader returning SQLite's TableProbe on a server (no StockItems on the page),
// and a reader that reads inside the consumer's transaction (Reserved 2 before any COMMIT).
TEST_CASE("on PostgreSQL the step-through page shows the server's committed tables after each step",
          "[postgres][html]") {
  testing::TempDir dir;
  const std::string path = dir.File("page.html");
  testing::CliResult r = RunPg({"run", "crash-before-commit", "--html", path}, "t_html");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json data = testing::PageData(testing::ReadFile(path));
  const auto& steps = data["steps"];
  std::vector<size_t> updates, commits;
  size_t crash = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string text = steps[i]["text"].get<std::string>();
    if (steps[i]["kind"] == "sql" && text.find("UPDATE StockItems") != std::string::npos) updates.push_back(i);
    if (steps[i]["kind"] == "sql" && text.find("COMMIT") != std::string::npos) commits.push_back(i);
    if (steps[i]["kind"] == "crash") crash = i;
    INFO(i << ": " << text << " | Reserved " << ReservedAt(data, i));
    CHECK(steps[i]["note"].get<std::string>().find("could not be read") == std::string::npos);
  }
  REQUIRE(updates.size() == 2);
  REQUIRE(crash > updates[0]);
  REQUIRE_FALSE(commits.empty());
  CHECK(ReservedAt(data, updates[0]) == "0");  // not committed: no other session sees it
  CHECK(ReservedAt(data, crash) == "0");
  CHECK(ReservedAt(data, updates[1]) == "0");
  CHECK(ReservedAt(data, commits.back()) == "2");
  CHECK(ReservedAt(data, steps.size() - 1) == "2");
}

TEST_CASE("a server that cannot be reached is a database error (exit 3)", "[postgres]") {
  testing::TempDir dir;
  testing::CliResult r = RunCli({"run", "naive", "--backend", "postgres", "--dsn",
                                 "host=" + dir.path() + " connect_timeout=2"});
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("cannot connect") != std::string::npos);
}

std::vector<std::string> Entries(const std::string& path) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(path.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(d);
  }
  return names;
}

TEST_CASE("without --dsn a throwaway cluster runs the lesson and is removed at the end",
          "[postgres]") {
  testing::TempDir tmp;
  ::chmod(tmp.path().c_str(), 0755);  // the server runs as `postgres` when the tests run as root
  testing::CliResult r =
      RunCli({"run", "naive", "--backend", "postgres"}, {"NO_COLOR=1", "TMPDIR=" + tmp.path()});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "[naive]              delivered twice -> Dune reserved: 4\n");
  CHECK(Entries(tmp.path()).empty());
}

TEST_CASE(
    "Ctrl-C during a run on a throwaway cluster: exit 130, the server stopped, its folder removed",
    "[postgres]") {
  testing::TempDir tmp;
  ::chmod(tmp.path().c_str(), 0755);  // the server runs as `postgres` when the tests run as root
  testing::BackgroundRun run({"run", "concurrent", "--backend", "postgres", "--hold-ms", "3000"},
                             {"NO_COLOR=1", "TMPDIR=" + tmp.path()});
  // Wait until the server says it is ready, then interrupt in the middle of the hold.
  bool ready = false;
  for (int i = 0; i < 6000 && !ready; ++i) {
    for (const std::string& entry : Entries(tmp.path())) {
      // The cluster's folder; the run's temporary SQLite file sits beside it.
      if (entry.rfind("dedupsim-pg-", 0) != 0) continue;
      std::string log = tmp.path() + "/" + entry + "/server.log";
      ready = testing::ReadFile(log).find("ready to accept connections") != std::string::npos;
    }
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(ready);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // into the scenario's hold
  run.Signal(SIGINT);
  const int status = run.WaitStatus();
  INFO(run.err());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  CHECK(Entries(tmp.path()).empty());
}

// Issue 26, case 10: an interrupt while initdb writes the cluster's folder (an earlier
// dedupsim let initdb live on for seconds, and left the folder behind).
TEST_CASE("case 10: Ctrl-C during initdb: exit 130, initdb killed and reaped, no folder left",
          "[postgres]") {
  // Mutation caught: initdb forked without registering it with run_files (it runs on after
  // dedupsim exits), or the cleanups run before the children are killed (the folder is
  // removed while initdb still writes into it).
  testing::TempDir tmp;
  ::chmod(tmp.path().c_str(), 0755);  // initdb runs as `postgres` when the tests run as root
  testing::TempDir cache;  // empty: no template to copy, so initdb runs
  testing::BackgroundRun run({"run", "naive", "--backend", "postgres"},
                             {"NO_COLOR=1", "TMPDIR=" + tmp.path(),
                              "DEDUPSIM_PAUSE_AT=initdb-started",
                              "DEDUPSIM_CACHE_DIR=" + cache.path()});
  REQUIRE(run.WaitForLine("paused at initdb-started") != "");
  const pid_t pid = run.pid();
  // initdb is dedupsim's child. The pause comes right after the fork: the child may not
  // have executed initdb yet, so the test waits for that event (its command line changes).
  std::string children = testing::ReadFile("/proc/" + std::to_string(pid) + "/task/" +
                                           std::to_string(pid) + "/children");
  REQUIRE(!children.empty());
  const pid_t initdb = static_cast<pid_t>(std::stol(children));
  const auto exec_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (testing::ReadFile("/proc/" + std::to_string(initdb) + "/cmdline").find("initdb") ==
             std::string::npos &&
         std::chrono::steady_clock::now() < exec_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(testing::ReadFile("/proc/" + std::to_string(initdb) + "/cmdline").find("initdb") !=
          std::string::npos);
  run.Signal(SIGINT);
  const int status = run.WaitStatus();
  INFO(run.err());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  CHECK(::kill(initdb, 0) != 0);  // gone: killed and reaped before dedupsim exited
  CHECK(Entries(tmp.path()).empty());
}

}  // namespace
}  // namespace dedupsim::postgres_test

namespace dedupsim::postgres_test {

TEST_CASE("a moved PgConnection keeps its trace role", "[postgres]") {
  Recorder recorder;
  PgConnection first(Conninfo());
  first.SetTrace(&recorder, "A");
  first.SetTraceRole(kActorProbe, "checks");
  PgConnection moved(std::move(first));
  CHECK_FALSE(first.is_open());
  moved.Exec("SELECT 1");
  std::vector<TraceEvent> events = recorder.Events();
  REQUIRE_FALSE(events.empty());
  CHECK(events.back().instance == "A");
  CHECK(events.back().actor == kActorProbe);
}

}  // namespace dedupsim::postgres_test

namespace dedupsim::postgres_test {
namespace {

// Holds A's thread after the server has answered A's statement that starts with `late`,
// until B's INSERT is in the trace: a thread preempted between the server's answer and its
// own stamp.
class LateAfter final : public PgStepGate {
 public:
  LateAfter(const Recorder& recorder, std::string late)
      : recorder_(recorder), late_(std::move(late)) {}
  void BeforeStatement(PgConnection&, std::string_view) override {}
  bool Blocked(PgConnection&) override { return true; }
  void Released(PgConnection&) override {}
  void BeforeHook(PgConnection&, std::string_view) override {}
  void Answered(PgConnection&, std::string_view sql) override {
    if (sql.rfind(late_, 0) != 0) return;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!(b_stamped = HasInsertOf("B")) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  bool b_stamped = false;

 private:
  bool HasInsertOf(const std::string& instance) const {
    for (const TraceEvent& e : recorder_.Events()) {
      if (e.instance == instance && e.kind == "sql" && e.detail.rfind("INSERT", 0) == 0)
        return true;
    }
    return false;
  }
  const Recorder& recorder_;
  const std::string late_;
};

// Tells when B's own watcher has seen its statement wait for a lock.
class SeesBlocked final : public PgStepGate {
 public:
  void BeforeStatement(PgConnection&, std::string_view) override {}
  bool Blocked(PgConnection&) override {
    blocked = true;
    return true;
  }
  void Released(PgConnection&) override {}
  void BeforeHook(PgConnection&, std::string_view) override {}
  std::atomic<bool> blocked{false};
};

// A waiter on its own thread: BEGIN, then the INSERT of key 1 that a holder already wrote
// (it waits on the holder's key, then gets 23505 or goes on), then ROLLBACK. Constructed, it
// returns once the waiter's own watcher has seen the INSERT wait (at most 30 s: waiting()).
class KeyWaiter {
 public:
  explicit KeyWaiter(PgConnection& c) : c_(c) {
    c_.SetGate(&seen_);
    thread_ = std::thread([this] {
      c_.Exec("BEGIN");
      result_ = c_.ExecInsert("INSERT INTO k (id) VALUES (1)", {});
      c_.Exec("ROLLBACK");
    });
    for (int i = 0; i < 30000 && !seen_.blocked; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    waiting_ = seen_.blocked;
  }
  ~KeyWaiter() {
    if (thread_.joinable()) thread_.join();
  }
  bool waiting() const { return waiting_; }
  InsertResult Join() {
    thread_.join();
    return result_;
  }

 private:
  PgConnection& c_;
  SeesBlocked seen_;
  InsertResult result_ = InsertResult::kInserted;
  bool waiting_ = false;
  std::thread thread_;
};

// The test's own schema, made afresh with one table, k (id integer PRIMARY KEY), on the
// connection returned (the test drops the schema on it at its end).
PgConnection KeySchema(const std::string& schema) {
  PgConnection setup(Conninfo());
  const std::string name = QuoteIdentifier(schema);
  setup.ExecScript("DROP SCHEMA IF EXISTS " + name + " CASCADE; CREATE SCHEMA " + name +
                   "; CREATE TABLE " + name + ".k (id integer PRIMARY KEY)");
  return setup;
}

// A connection in schema whose steps recorder traces as instance's.
PgConnection TracedIn(const std::string& schema, Recorder& recorder, const std::string& instance) {
  PgConnection c(Conninfo(), schema);
  c.SetTrace(&recorder, instance);
  return c;
}

// A holds key 1 in an open block; B (watched) waits for it, on its own thread, until its
// watcher has seen the wait; A's gate holds A's thread, after the server's answer to A's
// statement that starts with `late`, until B's INSERT is in the trace.
size_t IndexOfStep(const std::vector<TraceEvent>& events, const std::string& instance,
                   const std::string& detail) {
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].instance == instance && events[i].detail.rfind(detail, 0) == 0) return i;
  }
  FAIL("no step " << detail << " of " << instance);
  return 0;
}

struct HeldKeyPair {
  HeldKeyPair(const std::string& name, const std::string& late)
      : schema(name),
        setup(KeySchema(name)),
        a(TracedIn(name, recorder, "A")),
        b(TracedIn(name, recorder, "B")),
        gate(recorder, late) {
    b.WatchWaits(Conninfo());
    a.SetGate(&gate);
    a.Exec("BEGIN");
    a.Exec("INSERT INTO k (id) VALUES (1)");
    waiter.emplace(b);
  }
  // B's INSERT's result, once A's transaction is over and the schema dropped; the test
  // stops unless B's watcher saw B wait and A's gate held A until B's INSERT was stamped.
  InsertResult JoinB() {
    const InsertResult result = waiter->Join();
    if (a.InTransaction()) a.Exec("ROLLBACK");
    setup.ExecScript("DROP SCHEMA " + QuoteIdentifier(schema) + " CASCADE");
    REQUIRE(waiter->waiting());
    REQUIRE(gate.b_stamped);
    return result;
  }
  // A's step that starts with a_step is listed, and stamped, before B's INSERT (which
  // could not end before it).
  void CheckBeforeBInsert(const std::string& a_step) const {
    std::vector<TraceEvent> events = recorder.Events();
    const size_t before = IndexOfStep(events, "A", a_step);
    const size_t insert = IndexOfStep(events, "B", "INSERT");
    INFO("A's " << a_step << " at " << events[before].at_us << " us, B's INSERT at "
                << events[insert].at_us << " us: " << events[insert].result);
    CHECK(Has(events[insert].result, "waited on"));
    CHECK(events[before].at_us < events[insert].at_us);
    CHECK(before < insert);
  }
  const std::string schema;
  Recorder recorder;
  PgConnection setup;
  PgConnection a;
  PgConnection b;
  LateAfter gate;
  std::optional<KeyWaiter> waiter;
};

}  // namespace

// Each connection stamps a step when its answer is in. B's INSERT waits on A's key; A's
// COMMIT ends A's transaction on the server, which lets B go on (23505), and A's thread is
// held before it stamps its COMMIT until B's INSERT is in the trace. A's COMMIT must still
// be stamped before B's INSERT, which could not end before it.
TEST_CASE(
    "on PostgreSQL a COMMIT is stamped before the waiter it let go on, however late its "
    "thread",
    "[postgres][trace]") {
  HeldKeyPair pair("t_release_stamp", "COMMIT");
  pair.a.Exec("COMMIT");
  CHECK(pair.JoinB() == InsertResult::kDuplicateKey);
  pair.CheckBeforeBInsert("COMMIT");
}

// A statement that waited and went on records a take (the holder's release is stamped
// before it); one that gave up waiting (lock_timeout, 55P03) records none: no lock was freed
// for it, so no holder's step is moved before it.
TEST_CASE("on PostgreSQL a wait that went on is recorded as a take, one given up is not",
          "[postgres][trace]") {
  const std::string schema = "t_take_or_not";
  PgConnection setup = KeySchema(schema);
  Recorder recorder;
  PgConnection a = TracedIn(schema, recorder, "A");
  a.Exec("BEGIN");
  a.Exec("INSERT INTO k (id) VALUES (1)");
  // Any other owner's view of the table: no take since 0 leaves the stamp at now.
  const int owner = 0;
  auto stamp_now = [&] {
    const int64_t now = recorder.MicrosSinceOrigin();
    return std::pair(recorder.ReleaseStamp(a.holder_key(), &owner, 0, now), now);
  };

  PgConnection gives_up = TracedIn(schema, recorder, "B");
  gives_up.WatchWaits(Conninfo());
  gives_up.ExecScript("SET lock_timeout = '2s'");  // long enough for its watcher to look
  gives_up.Exec("BEGIN");
  std::string sqlstate;
  try {
    gives_up.ExecInsert("INSERT INTO k (id) VALUES (1)", {});
  } catch (const PgError& e) {
    sqlstate = e.sqlstate();
  }
  gives_up.Exec("ROLLBACK");
  REQUIRE(sqlstate == "55P03");
  REQUIRE(gives_up.watched().size() >= 2);
  CHECK(gives_up.watched()[1].waited);
  const auto [after_give_up, now_then] = stamp_now();
  CHECK(after_give_up == now_then);  // no take recorded

  PgConnection goes_on = TracedIn(schema, recorder, "C");
  goes_on.WatchWaits(Conninfo());
  KeyWaiter third(goes_on);
  a.Exec("COMMIT");
  const InsertResult c_insert = third.Join();
  setup.ExecScript("DROP SCHEMA t_take_or_not CASCADE");
  REQUIRE(third.waiting());
  CHECK(c_insert == InsertResult::kDuplicateKey);
  const auto [after_went_on, now_later] = stamp_now();
  CHECK(after_went_on < now_later);  // C's take, since 0
}

// An error in a transaction block (here 23505, no savepoint) aborts the transaction on the
// server, which frees its locks then, not at the ROLLBACK that follows: B, waiting on A's
// key, goes on at A's failed INSERT. A's thread is held after that answer until B's INSERT
// is in the trace; A's failed INSERT must still be stamped before it.
TEST_CASE(
    "on PostgreSQL a failed statement that aborted the transaction is stamped before "
    "the waiter it let go on",
    "[postgres][trace]") {
  HeldKeyPair pair("t_abort_stamp", "INSERT INTO k (id) VALUES (2)");
  pair.setup.ExecScript("INSERT INTO t_abort_stamp.k (id) VALUES (2)");
  CHECK(pair.a.ExecInsert("INSERT INTO k (id) VALUES (2)", {}) == InsertResult::kDuplicateKey);
  // A's key went with A's aborted transaction: B's INSERT of it goes on, before A's ROLLBACK.
  CHECK(pair.JoinB() == InsertResult::kInserted);
  pair.CheckBeforeBInsert("INSERT INTO k (id) VALUES (2)");
}

}  // namespace dedupsim::postgres_test
