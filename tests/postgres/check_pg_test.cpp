// dedupsim check --backend postgres on the fixture's server: each file in a database and a
// role of its own (files/file_database.h). Each test names the one-line mutation it catches.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "page_data.h"
#include "pg_support.h"

namespace dedupsim::check_pg_test {

using testing::CliResult;
using testing::Conninfo;
using testing::RunCli;
using testing::TempDir;

namespace {

std::string Data(const std::string& name) {
  return std::string(DEDUPSIM_SOURCE_DIR) + "/tests/data/consumers/" + name;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

CliResult CheckPg(std::vector<std::string> args) {
  args.insert(args.begin(), "check");
  args.insert(args.end(), {"--backend", "postgres", "--dsn", Conninfo()});
  return RunCli(args);
}

}  // namespace

// False pass 8: safe on SQLite only because SQLite refuses a stale snapshot's write. On
// PostgreSQL both copies read no row and both reserve. Catches: GradingOptions no longer
// setting options.postgres (the file graded on SQLite again: it passes there, with a note).
TEST_CASE("check --backend postgres fails the deferred check with no key, with both copies reading no row",
          "[check][postgres]") {
  CliResult r = CheckPg({Data("wrong/8-deferred-check.toml"), "--fault", "concurrent",
                         "--budget", "none", "--format", "json"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 1);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["backend"] == "postgres");
  const auto& cell = j["consumers"][0]["cells"][0];
  CHECK(cell["fault"] == "concurrent");
  CHECK(cell["passed"] == false);
  CHECK(cell["staleRefusals"] == 0);  // PostgreSQL refused nothing: it let both through
  const auto& deliveries = cell["counterexample"]["deliveries"];
  REQUIRE(deliveries.size() == 2);
  for (const auto& d : deliveries) {
    const std::string did = d["did"].dump();
    CHECK(did.find("SELECT Handled: no row") != std::string::npos);
    CHECK(d["committed"].dump().find("UPDATE StockItems") != std::string::npos);
    CHECK(d["end"] == "acked");
  }
  CHECK(deliveries[0]["instance"] != deliveries[1]["instance"]);
  CHECK(cell["counterexample"]["outcome"] == "twice");
}

// The correct consumers of tests/data/consumers/right that need no second store pass every
// fault on PostgreSQL (insert-or-ignore through its postgres text). Catches: ResetPostgres
// no longer running a strategy's pg_reset (own-reservations-table's rows outlive a schedule
// and the next one skips as a duplicate: lost).
TEST_CASE("check --backend postgres passes the correct consumers of each shape", "[check][postgres]") {
  TempDir dir;
  for (const char* name : {"dialects-and-labels.toml", "guarded-update.toml",
                           "immediate-check-then-insert.toml", "insert-or-ignore.toml",
                           "own-reservations-table.toml", "two-phase-own-table.toml"}) {
    Write(dir.File(name), Slurp(Data(std::string("right/") + name)));
  }
  CliResult r = CheckPg({dir.path(), "--jobs", "2", "--budget", "none", "--format", "json"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  std::istringstream lines(r.out);
  std::string line;
  int passed = 0;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line);
    if (j.contains("summary")) {
      CHECK(j["summary"]["files"] == 6);
      CHECK(j["summary"]["passed"] == 6);
      continue;
    }
    INFO(line);
    CHECK(j["passed"] == true);
    passed += j["passed"] == true ? 1 : 0;
  }
  CHECK(passed == 6);
}

// A batch on PostgreSQL: a malformed file and a file whose SQL PostgreSQL does not take
// (INSERT OR IGNORE with no postgres text) are rows with FILE:LINE:COLUMN; the right file
// is graded. Catches: Run() no longer handing "--backend postgres" to the batch's children
// (graded on SQLite, the INSERT OR IGNORE file passes instead of being an error).
TEST_CASE("check --backend postgres grades a batch around a malformed file and SQL PostgreSQL refuses",
          "[check][postgres]") {
  TempDir dir;
  Write(dir.File("a-right.toml"), Slurp(Data("right/insert-or-ignore.toml")));
  Write(dir.File("b-malformed.toml"), "effect = \"stock\"\n[[step]\nsql = 1\n");
  std::string sqlite_only = Slurp(Data("right/insert-or-ignore.toml"));
  const size_t at = sqlite_only.find("sql = {");
  REQUIRE(at != std::string::npos);
  sqlite_only.replace(at, sqlite_only.find('\n', at) - at,
                      "sql = \"INSERT OR IGNORE INTO Inbox (MessageId, Consumer, ReceivedAt, "
                      "CompletedAt) VALUES (:MessageId, :Consumer, :Now, :Now)\"");
  Write(dir.File("c-sqlite-only.toml"), sqlite_only);
  CliResult r = CheckPg({dir.path(), "--jobs", "2", "--fault", "concurrent", "--format", "json"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 2);
  std::istringstream lines(r.out);
  std::string line;
  std::vector<nlohmann::json> rows;
  while (std::getline(lines, line)) rows.push_back(nlohmann::json::parse(line));
  REQUIRE(rows.size() == 4);
  CHECK(rows[0]["passed"] == true);
  CHECK(rows[1]["verdict"] == "error");
  CHECK(rows[1]["error"]["line"] == 2);
  CHECK(rows[2]["verdict"] == "error");
  CHECK(rows[2]["error"]["line"] == 12);
  CHECK(rows[2]["error"]["message"].get<std::string>().find(
            "PostgreSQL does not take this statement: syntax error at or near \"OR\"") !=
        std::string::npos);
  CHECK(rows[3]["summary"]["errors"] == 2);
}

// Hostile statements in a step's postgres text are refused and touch nothing outside the
// file's database. Catches: set_config dropped from kRevokedFunctions (the statement that
// lifts the role's statement_timeout runs, and the file passes).
TEST_CASE("check --backend postgres refuses statements that reach outside the file's database",
          "[check][postgres]") {
  TempDir dir;
  const std::string pwned = dir.File("pwned");
  struct Case {
    std::string sql;
    std::string expected;  // in the one-line error
  };
  const std::vector<Case> cases = {
      {"COPY Inbox TO PROGRAM 'touch " + pwned + "'", "PostgreSQL does not take this statement"},
      {"SET ROLE postgres", "PostgreSQL does not take this statement"},
      {"CREATE EXTENSION dblink", "PostgreSQL does not take this statement"},
      {"ALTER SYSTEM SET fsync = on", "PostgreSQL does not take this statement"},
      {"SELECT pg_read_file('/etc/passwd')", "refused when it ran on PostgreSQL"},
      {"SELECT set_config('statement_timeout', '0', false)", "refused when it ran on PostgreSQL"},
      {"SELECT query_to_xml('SELECT 1', true, false, '')", "refused when it ran on PostgreSQL"},
  };
  for (const Case& c : cases) {
    const std::string file = dir.File("hostile.toml");
    Write(file,
          "effect = \"stock\"\nconsumer = \"inventory.reserve-stock\"\n\n[[step]]\nsql = { sqlite = "
          "\"SELECT 1 FROM Inbox WHERE MessageId = :MessageId\", postgres = \"" +
              c.sql +
              "\" }\non-row = \"skip-and-ack\"\n\n[[step]]\nsql = \"UPDATE StockItems SET "
              "Reserved = Reserved + :Quantity WHERE BookId = :BookId\"\n");
    CliResult r = CheckPg({file, "--fault", "clean"});
    INFO(c.sql << "\n" << r.out << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(file + ":5:") != std::string::npos);
    CHECK(r.err.find(c.expected) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);  // one line
  }
  CHECK_FALSE(std::filesystem::exists(pwned));
}

}  // namespace dedupsim::check_pg_test

namespace dedupsim::check_pg_test {

// check --html on PostgreSQL: each counterexample's page with the file's database read after
// every step, committed rows only. The deferred check: A's update shows only at A's COMMIT
// (7, then 10), B's at B's (13: Dune reserved twice). Failed before: refused ("--html reads
// the tables from the explorer's SQLite file", exit 2). Catches Explorer::Replay reading
// the scheduler's SQLite file on PostgreSQL (no StockItems row: "" on the page).
TEST_CASE("check --backend postgres --html: the file's database after each step, committed rows only",
          "[check][postgres][html]") {
  TempDir dir;
  const std::string page = dir.File("deferred.html");
  CliResult r = CheckPg({Data("wrong/8-deferred-check.toml"), "--fault", "concurrent", "--html", page});
  INFO(r.err);
  REQUIRE(r.exit_code == 1);
  const nlohmann::json data = testing::PageData(Slurp(page));
  REQUIRE(data["sections"].size() == 1);
  CHECK(data["sections"][0]["scenario"] == "8-deferred-check under concurrent");
  auto reserved = [&](size_t i) {
    return testing::CellAfter(data, i, "database", "StockItems", "Reserved");
  };
  const std::vector<size_t> updates = testing::StepsWith(data, "UPDATE StockItems");
  const std::vector<size_t> commits = testing::StepsWith(data, "COMMIT");
  REQUIRE(updates.size() == 2);
  REQUIRE(commits.size() == 2);
  CHECK(reserved(updates[0]) == "7");  // not committed yet: no other session sees it
  CHECK(reserved(commits[0]) == "10");
  CHECK(reserved(updates[1]) == "10");
  CHECK(reserved(commits[1]) == "13");
  CHECK(reserved(data["steps"].size() - 1) == "13");
}

}  // namespace dedupsim::check_pg_test
