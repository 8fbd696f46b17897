// The dedupsim binary end to end: exact stdout, JSON Lines, exit codes, and bad input that
// loses nothing.
#include <catch2/catch.hpp>

#include <sys/file.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "sqlite/connection.h"
#include "sqlite/statement.h"
#include "support.h"

namespace cli_test {

using namespace dedupsim;
using namespace dedupsim::testing;

namespace {

const std::vector<std::string> kPostSix = {
    "[naive]              delivered twice -> Dune reserved: 4",
    "[check-then-process] crash after stock commit, redelivered -> Dune reserved: 4",
    "[inbox]              delivered twice -> processed: True, False; Dune reserved: 2",
    "[inbox]              crash before commit -> reserved 0; redelivered -> Dune reserved: 2",
    "[inbox]              two copies at once -> processed: True, False; Dune reserved: 2; second "
    "waited for the first: True",
    "[email]              crash after send, redelivered -> emails sent: 1, second delivery: "
    "NeedsReconciliation",
};

}  // namespace

TEST_CASE("run all prints exactly the post's six lines", "[cli]") {
  CliResult r = RunCli({"run", "all"});
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(SplitLines(r.out) == kPostSix);
  // The same lines as the post's, kept as test data.
  CHECK(SplitLines(r.out) == PostLines());
}

TEST_CASE("run all --check holds in every crash mode", "[cli]") {
  auto mode = GENERATE(as<std::string>{}, "throw", "exit", "kill");
  CliResult r = RunCli({"run", "all", "--check", "--crash-mode", mode, "--hold-ms", "200"});
  CHECK(r.exit_code == 0);
  CHECK(SplitLines(r.out) == kPostSix);
}

TEST_CASE("format json gives one object per scenario with every figure", "[cli]") {
  CliResult r = RunCli({"run", "all", "--format", "json"});
  REQUIRE(r.exit_code == 0);
  auto lines = SplitLines(r.out);
  REQUIRE(lines.size() == 6);
  std::vector<nlohmann::json> objects;
  for (const auto& line : lines) objects.push_back(nlohmann::json::parse(line));
  for (size_t i = 0; i < 6; ++i) {
    CHECK(objects[i]["line"] == kPostSix[i]);
    CHECK(objects[i].contains("reserved"));
    CHECK(objects[i].contains("tag"));
  }
  CHECK(objects[0]["scenario"] == "naive");
  CHECK(objects[0]["reserved"] == 4);
  CHECK(objects[2]["processed"] == nlohmann::json({true, false}));
  CHECK(objects[3]["reservedAfterCrash"] == 0);
  CHECK(objects[4]["secondWaited"] == true);
  CHECK(objects[4]["waitMs"].get<int>() > 0);  // how long depends on when B ran
  CHECK(objects[4].contains("busyRetries"));
  CHECK(objects[5]["emailsSent"] == 1);
  CHECK(objects[5]["secondDelivery"] == "NeedsReconciliation");
}

TEST_CASE("trace with json puts the events in the object", "[cli]") {
  CliResult r = RunCli({"run", "concurrent", "--format", "json", "--trace", "--hold-ms", "100",
                        "--stagger-ms", "20"});
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["events"].is_array());
  CHECK(j["events"].size() >= 8);
}

TEST_CASE("trace in text mode writes the timeline to stderr only", "[cli]") {
  CliResult r = RunCli({"run", "concurrent", "--trace", "--hold-ms", "100", "--stagger-ms", "20"});
  REQUIRE(r.exit_code == 0);
  CHECK(SplitLines(r.out).size() == 1);
  CHECK(r.err.find("duplicate key (1555)") != std::string::npos);
  CHECK(r.err.find("B pid") != std::string::npos);
}

TEST_CASE("options change the figures", "[cli]") {
  CliResult r = RunCli({"run", "naive", "inbox", "--quantity", "3", "--deliveries", "3"});
  CHECK(r.exit_code == 0);
  CHECK(SplitLines(r.out) ==
        std::vector<std::string>{
            "[naive]              delivered 3 times -> Dune reserved: 9",
            "[inbox]              delivered 3 times -> processed: True, False, False; Dune reserved: 3"});
}

TEST_CASE("check passes with the defaults and names what differs", "[cli]") {
  CHECK(RunCli({"run", "naive", "--check"}).exit_code == 0);
  // Released no earlier than the end of a 100 ms hold, the second copy cannot wait.
  CliResult r = RunCli({"run", "concurrent", "--check", "--hold-ms", "100", "--stagger-ms", "100"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("second waited for the first: False") != std::string::npos);
}

TEST_CASE("list shows every scenario with its tag and summary", "[cli]") {
  CliResult r = RunCli({"list"});
  CHECK(r.exit_code == 0);
  auto lines = SplitLines(r.out);
  REQUIRE(lines.size() >= 7);
  CHECK(lines[0].rfind("naive ", 0) == 0);
  CHECK(lines[0].find("[naive]") != std::string::npos);
  CliResult j = RunCli({"list", "--format", "json"});
  CHECK(nlohmann::json::parse(SplitLines(j.out)[1])["scenario"] == "check-then-process");
}

TEST_CASE("help and version exit 0", "[cli]") {
  CliResult help = RunCli({"--help"});
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("Exit status") != std::string::npos);
  CHECK(RunCli({"run", "--help"}).exit_code == 0);
  CliResult version = RunCli({"--version"});
  CHECK(version.exit_code == 0);
  CHECK(version.out.rfind("dedupsim ", 0) == 0);
}

TEST_CASE("usage errors exit 2 with one line", "[cli]") {
  auto check_usage = [](const std::vector<std::string>& args, const std::string& needle) {
    CliResult r = RunCli(args);
    CAPTURE(args, r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(SplitLines(r.err).size() == 1);
    CHECK(r.err.find(needle) != std::string::npos);
  };
  check_usage({"run", "nope"}, "valid: naive, check-then-process");
  check_usage({"run", "naive", "--quantity", "-1"}, "quantity");
  check_usage({"run", "naive", "--quantity", "two"}, "quantity");
  check_usage({"run", "concurrent", "--hold-ms", "x"}, "hold-ms");
  check_usage({"run", "naive", "--format", "xml"}, "format");
  check_usage({"run", "naive", "--crash-mode", "kill"}, "no crash point");
  // orphan-claim kills its owner at a hook, always by SIGKILL: the refusal is true of it too.
  check_usage({"run", "orphan-claim", "--crash-mode", "kill"},
              "no crash point whose way of dying --crash-mode chooses");
  check_usage({"run", "inbox", "--instances", "processes"}, "single consumer instance");
  check_usage({"run"}, "scenarios");
  check_usage({"frobnicate"}, "frobnicate");
  // With several scenarios, each option applies where it fits.
  CHECK(RunCli({"run", "naive", "email", "--crash-mode", "kill"}).exit_code == 0);
}

TEST_CASE("db option keeps the database for the sqlite3 shell and reuses it", "[cli]") {
  TempDir dir;
  std::string path = dir.File("kept.db");
  CHECK(RunCli({"run", "inbox", "--db", path}).exit_code == 0);
  {
    Connection c(path, {});
    Statement q = c.Prepare("SELECT Reserved FROM StockItems");
    REQUIRE(q.Step());
    CHECK(q.ColumnInt(0) == 2);
  }
  CliResult again = RunCli({"run", "all", "--db", path, "--journal", "delete"});
  CHECK(again.exit_code == 0);
  CHECK(SplitLines(again.out) == kPostSix);
}

TEST_CASE("db option on anything that is not a dedupsim database exits 3 and loses nothing",
          "[cli]") {
  TempDir dir;
  auto refused = [](const std::string& path, const std::string& needle) {
    std::string before = ReadFile(path);
    CliResult r = RunCli({"run", "all", "--db", path});
    CAPTURE(path, r.err);
    CHECK(r.exit_code == 3);
    CHECK(r.out.empty());
    CHECK(SplitLines(r.err).size() == 1);
    CHECK(r.err.find(needle) != std::string::npos);
    CHECK(ReadFile(path) == before);
  };
  SECTION("a text file") {
    WriteFile(dir.File("notes.txt"), "my notes\n");
    refused(dir.File("notes.txt"), "not an SQLite database");
  }
  SECTION("another application's SQLite database") {
    std::string path = dir.File("app.db");
    {
      ConnectionOptions options;
      options.create = true;
      Connection c(path, options);
      c.ExecScript("PRAGMA journal_mode=WAL; CREATE TABLE StockItems (x); INSERT INTO StockItems VALUES (7);");
    }
    refused(path, "another application");
  }
  SECTION("a directory") {
    CliResult r = RunCli({"run", "naive", "--db", dir.path()});
    CHECK(r.exit_code == 3);
    CHECK(r.err.find("is a directory") != std::string::npos);
  }
  SECTION("a path in a missing folder") {
    CliResult r = RunCli({"run", "naive", "--db", dir.File("no/such/folder.db")});
    CHECK(r.exit_code == 3);
    CHECK(SplitLines(r.err).size() == 1);
  }
  SECTION("a path in a read-only place") {
    // /proc refuses new files even to root, unlike a chmod-ed folder.
    CliResult r = RunCli({"run", "naive", "--db", "/proc/dedupsim-test.db"});
    CHECK(r.exit_code == 3);
    CHECK(SplitLines(r.err).size() == 1);
  }
  SECTION("a dedupsim database that another process holds locked") {
    std::string path = dir.File("busy.db");
    REQUIRE(RunCli({"run", "naive", "--db", path}).exit_code == 0);
    Connection holder(path, {});
    holder.Exec("BEGIN EXCLUSIVE");
    std::string before = ReadFile(path);
    CliResult r = RunCli({"run", "naive", "--db", path});
    CHECK(r.exit_code == 3);
    CHECK(r.err.find("locked by another process") != std::string::npos);
    CHECK(ReadFile(path) == before);
    holder.Exec("ROLLBACK");
  }
}

}  // namespace cli_test
