// End to end through the built binary: the cleanup command (exit statuses, a foreign or
// missing file left as it was, rows deleted counted), the new run options, alerts on
// stderr, and `run all` still printing exactly the post's six lines.
#include <catch2/catch.hpp>
#include <regex>
#include <sqlite3.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "exit_status.h"
#include "scenarios.h"
#include "support.h"

namespace cleanup_test {

using namespace dedupsim;
using dedupsim::testing::PostLines;
using dedupsim::testing::ReadFile;
using dedupsim::testing::RunCli;
using dedupsim::testing::SplitLines;
using dedupsim::testing::TempDir;
using dedupsim::testing::WriteFile;

namespace {

void Sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  char* error = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  std::string message = error ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  REQUIRE(message == "");
  REQUIRE(rc == SQLITE_OK);
}

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

}  // namespace

TEST_CASE("cleanup deletes old completed records and counts them", "[cleanup]") {
  TempDir dir;
  std::string db = dir.File("inventory.db");
  REQUIRE(RunCli({"run", "inbox", "--deliveries", "1", "--db", db}).exit_code == kExitOk);
  Sql(db,
      "INSERT INTO Inbox (MessageId, Consumer, ReceivedAt, CompletedAt) VALUES "
      "('old-1', 'c', '2020-01-01T00:00:00.000Z', '2020-01-01T00:00:00.000Z'),"
      "('old-2', 'c', '2020-01-02T00:00:00.000Z', '2020-01-02T00:00:00.000Z'),"
      "('stuck', 'c', '2020-01-03T00:00:00.000Z', NULL)");

  auto result = RunCli({"cleanup", "--db", db, "--older-than", "14d"});
  CHECK(result.exit_code == kExitOk);
  CHECK(result.out.find("deleted 2 Inbox record(s) received before ") == 0);
  CHECK(result.out.find("(older than 14d); kept 2, of which 1 older but still in progress") !=
        std::string::npos);

  auto again = RunCli({"cleanup", "--db", db, "--older-than", "36h", "--format", "json"});
  CHECK(again.exit_code == kExitOk);
  auto j = nlohmann::json::parse(again.out);
  CHECK(j["deleted"] == 0);
  CHECK(j["kept"] == 2);
  CHECK(j["keptInProgress"] == 1);
  CHECK(j["olderThan"] == "36h");

  auto everything = RunCli({"cleanup", "--db", db, "--older-than", "0s", "--format", "json"});
  CHECK(nlohmann::json::parse(everything.out)["deleted"] == 1);  // the run's own record
}

TEST_CASE("cleanup refuses a bad duration with exit 2", "[cleanup]") {
  TempDir dir;
  std::string db = dir.File("inventory.db");
  REQUIRE(RunCli({"run", "naive", "--db", db}).exit_code == kExitOk);
  for (const std::vector<std::string>& duration :
       {std::vector<std::string>{"--older-than", "14x"}, {"--older-than", "-14d"},
        {"--older-than=-14d"}, {"--older-than", "14"}, {"--older-than", ""}}) {
    std::vector<std::string> args{"cleanup", "--db", db};
    args.insert(args.end(), duration.begin(), duration.end());
    auto result = RunCli(args);
    INFO(duration.back());
    CHECK(result.exit_code == kExitUsage);
    CHECK(result.out.empty());
  }
  CHECK(RunCli({"cleanup", "--db", db}).exit_code == kExitUsage);  // --older-than is required
}

TEST_CASE("cleanup leaves a file that is not a dedupsim database as it was", "[cleanup]") {
  TempDir dir;
  std::string text = dir.File("notes.txt");
  WriteFile(text, "my notes, not a database\n");
  auto result = RunCli({"cleanup", "--db", text, "--older-than", "14d"});
  CHECK(result.exit_code == kExitDatabase);
  CHECK(ReadFile(text) == "my notes, not a database\n");

  std::string other = dir.File("other.db");
  Sql(other, "PRAGMA application_id=7; CREATE TABLE Inbox (ReceivedAt TEXT); "
             "INSERT INTO Inbox VALUES ('2000-01-01');");
  std::string before = ReadFile(other);
  auto refused = RunCli({"cleanup", "--db", other, "--older-than", "1d"});
  CHECK(refused.exit_code == kExitDatabase);
  CHECK(refused.err.find("not a dedupsim database") != std::string::npos);
  CHECK(ReadFile(other) == before);
  CHECK_FALSE(Exists(other + "-wal"));
}

TEST_CASE("cleanup does not create a missing database", "[cleanup]") {
  TempDir dir;
  std::string missing = dir.File("missing.db");
  auto result = RunCli({"cleanup", "--db", missing, "--older-than", "14d"});
  CHECK(result.exit_code == kExitDatabase);
  CHECK_FALSE(Exists(missing));
}

TEST_CASE("run all still prints exactly the post's six lines", "[cli]") {
  std::vector<std::string> post = PostLines();
  REQUIRE(post.size() == 6);
  auto result = RunCli({"run", "all"});
  CHECK(result.exit_code == kExitOk);
  CHECK(SplitLines(result.out) == post);
}

TEST_CASE("run everything runs every scenario, and every check holds", "[cli]") {
  // Shorter holds and staggers than the defaults (500 and 100 ms), the second copy still
  // starting inside the first's hold: the pairs meet by events (B released once A holds the
  // lock at its hold point), so a hold's length changes how long B waits, not whether it
  // does, and every line is the default run's (the scenario pages' test runs the defaults).
  // The defaults' holds would make this test wait about 5 s more.
  auto result = RunCli({"run", "everything", "--check", "--hold-ms", "120", "--stagger-ms", "20"});
  CHECK(result.exit_code == kExitOk);
  std::vector<std::string> lines = SplitLines(result.out);
  REQUIRE(lines.size() == AllScenarios().size());
  // Beyond the post's six (which keep the post's tags), each line names its scenario, so
  // a student finds it with `dedupsim run NAME`; one wording for the figures.
  const std::regex figure_without_colon("reserved [0-9]|entries [0-9]|processed (True|False)|attempts:");
  for (size_t i = 0; i < lines.size(); ++i) {
    const Scenario& s = *AllScenarios()[i];
    INFO(lines[i]);
    if (!s.in_post) {
      CHECK(lines[i].rfind("[" + std::string(s.name) + "] ", 0) == 0);
      CHECK_FALSE(std::regex_search(lines[i], figure_without_colon));
    }
    CHECK(lines[i].find_first_of("\x01\x02\x03") == std::string::npos);  // no verdict markers
  }
}

TEST_CASE("the lesson options are checked", "[cli]") {
  CHECK(RunCli({"run", "broker-dedup", "--dedup-window", "8d"}).exit_code == kExitUsage);
  CHECK(RunCli({"run", "broker-dedup", "--dedup-window", "0m"}).exit_code == kExitUsage);
  CHECK(RunCli({"run", "broker-dedup", "--dedup-window", "10x"}).exit_code == kExitUsage);
  CHECK(RunCli({"run", "duplicate-as-error", "--max-deliveries", "0"}).exit_code == kExitUsage);
  CHECK(RunCli({"run", "retention", "--retention-days", "0"}).exit_code == kExitUsage);
  // An option a scenario has no use for, when the scenario is named alone.
  CHECK(RunCli({"run", "inbox", "--retention-days", "30"}).exit_code == kExitUsage);
  CHECK(RunCli({"run", "naive", "--dedup-window", "1m"}).exit_code == kExitUsage);
  CHECK(RunCli({"run", "shared-key", "--max-deliveries", "3"}).exit_code == kExitUsage);

  auto window = RunCli({"run", "broker-dedup", "--dedup-window", "7d", "--check"});
  CHECK(window.exit_code == kExitOk);
  CHECK(window.out.find("window 7d: producer resend after 1m -> dropped: 1") != std::string::npos);
}

// Mutations caught: the check dropped (the run goes on to the database and the broker:
// exit 3, "cannot connect"), or made after the --db file is created (w.db exists), or `>`
// made `>=` (30s refused).
TEST_CASE("a real broker's --dedup-window above 30s is refused before anything starts", "[cli]") {
  TempDir dir;
  const std::string db = dir.File("w.db");
  // No server listens on port 1: a run that got as far as the broker would fail there.
  auto refused = RunCli({"run", "broker-dedup", "--broker", "nats", "--broker-url",
                         "nats://127.0.0.1:1", "--dedup-window", "31s", "--db", db});
  CHECK(refused.exit_code == kExitUsage);
  CHECK(refused.err ==
        "dedupsim: --dedup-window 31s: on a real broker the lesson waits the window out in "
        "real time: at most 30s\n");
  CHECK(access(db.c_str(), F_OK) != 0);  // a misfit costs no run: no database created
  // 30s is allowed: this run goes on, to the broker that is not there.
  auto allowed = RunCli({"run", "broker-dedup", "--broker", "nats", "--broker-url",
                         "nats://127.0.0.1:1", "--dedup-window", "30s", "--db", db});
  CHECK(allowed.exit_code != kExitUsage);
  CHECK(allowed.err.find("--dedup-window") == std::string::npos);
  // The simulated broker's window is simulated: a week is fine.
  CHECK(RunCli({"run", "broker-dedup", "--dedup-window", "7d"}).exit_code == kExitOk);
}

TEST_CASE("content-mismatch raises its alert on stderr, and in the JSON", "[cli]") {
  auto text = RunCli({"run", "content-mismatch"});
  CHECK(text.exit_code == kExitOk);
  CHECK(text.err.find("dedupsim: alert: content-mismatch: message ") == 0);
  auto json = RunCli({"run", "content-mismatch", "--format", "json"});
  auto j = nlohmann::json::parse(json.out);
  CHECK(j["alerts"].size() == 1);
  CHECK(json.err.find("dedupsim: alert: ") == 0);
}

TEST_CASE("a side store never overwrites a foreign file, and removes its own", "[cli]") {
  TempDir dir;
  std::string db = dir.File("inventory.db");
  WriteFile(db + ".cache", "someone else's cache file");
  auto refused = RunCli({"run", "cache-arbiter", "--db", db});
  CHECK(refused.exit_code == kExitDatabase);
  CHECK(ReadFile(db + ".cache") == "someone else's cache file");

  ::unlink((db + ".cache").c_str());
  CHECK(RunCli({"run", "cache-arbiter", "email-reconcile", "--db", db}).exit_code == kExitOk);
  CHECK_FALSE(Exists(db + ".cache"));
  CHECK_FALSE(Exists(db + ".provider"));
}

}  // namespace cleanup_test
