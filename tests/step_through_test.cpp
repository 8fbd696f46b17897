// The step-through page (--html) of a counterexample, from `explore --counterexample` and
// from `check`: the replayed schedule's steps, each with the tables as the probe read them
// from the explorer's files right after it. Values read from the page's data.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "page_data.h"
#include "support.h"

namespace dedupsim::testing::step_through_test {

namespace {

std::string Example(const std::string& name) {
  return std::string(DEDUPSIM_SOURCE_DIR) + "/examples/consumers/" + name + ".toml";
}

}  // namespace

TEST_CASE("explore --counterexample --html: each step with the tables read after it",
          "[html][explore][cli]") {
  TempDir dir;
  const std::string page = dir.File("naive.html");
  CliResult r = RunCli({"explore", "--strategy", "naive", "--fault", "duplicate",
                        "--counterexample", "--html", page});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("naive under duplicate") != std::string::npos);  // the text as without it
  nlohmann::json data = PageData(ReadFile(page));
  // The two deliveries' updates, named from SQLite's reading of the statement, then the
  // stock as the probe read it: 0 before, 2 after the first, 4 after the second.
  std::vector<size_t> updates = StepsWith(data, "UPDATE StockItems");
  REQUIRE(updates.size() == 2);
  CHECK(CellAfter(data, updates[0] - 1, "database", "StockItems", "Reserved") == "0");
  CHECK(CellAfter(data, updates[0], "database", "StockItems", "Reserved") == "2");
  CHECK(CellAfter(data, updates[1], "database", "StockItems", "Reserved") == "4");
  // Every step has the tables read after it (one process: no step without a read).
  for (const auto& s : data["steps"]) {
    CHECK(s["snapshot"] >= 0);
    const auto& section = data["sections"][s["section"].get<size_t>()];
    CHECK(section["scenario"] == "naive under duplicate");
    CHECK(PageLine(section).find(
              "shortest failing schedule: 2 deliveries, 2 steps, outcome twice; "
              "final: reserved 4") == 0);
  }
}

TEST_CASE("check --html: the crash counterexample steps through the committed update",
          "[html][files][cli]") {
  TempDir dir;
  const std::string page = dir.File("ctp.html");
  CliResult r =
      RunCli({"check", Example("check-then-process"), "--fault", "crash", "--html", page});
  REQUIRE(r.exit_code == 1);
  nlohmann::json data = PageData(ReadFile(page));
  std::vector<size_t> crash = StepsWith(data, "crash at AfterStockCommitted");
  std::vector<size_t> updates = StepsWith(data, "UPDATE StockItems");
  REQUIRE(crash.size() == 1);
  REQUIRE(updates.size() == 2);
  // A crash is what happened, not a verdict: drawn plain, neither right nor wrong.
  CHECK(data["steps"][crash[0]]["tone"] == "");
  // The first attempt's update was committed before the crash: Dune's 7 reserved became 10
  // in the file, and the redelivery's update makes it 13.
  CHECK(updates[0] < crash[0]);
  CHECK(crash[0] < updates[1]);
  CHECK(CellAfter(data, crash[0], "database", "StockItems", "Reserved") == "10");
  CHECK(CellAfter(data, crash[0], "database", "Inbox", "Consumer").empty());  // no row yet
  CHECK(CellAfter(data, updates[1], "database", "StockItems", "Reserved") == "13");
  const size_t last = data["steps"].size() - 1;
  CHECK(CellAfter(data, last, "database", "Inbox", "Consumer") == "inventory.reserve-stock");
  CHECK(data["sections"][0]["scenario"] == "check-then-process under crash");
}

TEST_CASE(
    "explore --html shows the second file's tables: the cache key set, the stock never reserved",
    "[html][explore][cli]") {
  TempDir dir;
  const std::string page = dir.File("cache.html");
  CliResult r = RunCli({"explore", "--strategy", "cache-set-if-absent", "--fault", "crash",
                        "--counterexample", "--html", page});
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.find("outcome lost") != std::string::npos);
  nlohmann::json data = PageData(ReadFile(page));
  std::vector<size_t> set = StepsWith(data, "INSERT CacheKeys");
  REQUIRE(!set.empty());
  CHECK(CellAfter(data, set[0] - 1, "second file", "CacheKeys", "Key").empty());
  CHECK(
      CellAfter(data, set[0], "second file", "CacheKeys", "Key").find("inventory.reserve-stock:") ==
      0);
  const size_t last = data["steps"].size() - 1;
  CHECK(CellAfter(data, last, "database", "StockItems", "Reserved") == "0");
}

TEST_CASE("explore and check: no counterexample, no page (--html writes nothing and says so)",
          "[html][cli]") {
  TempDir dir;
  const std::string page = dir.File("inbox.html");
  CliResult check = RunCli({"check", Example("inbox"), "--fault", "crash", "--html", page});
  CHECK(check.exit_code == 0);
  CHECK(check.err.find("no failing schedule to step through; " + page + " not written") !=
        std::string::npos);
  CliResult explore = RunCli(
      {"explore", "--strategy", "inbox", "--fault", "crash", "--counterexample", "--html", page});
  CHECK(explore.exit_code == 0);
  CHECK(explore.err.find("not written") != std::string::npos);
  CHECK(!std::ifstream(page).good());
  CliResult matrix = RunCli({"explore", "--strategy", "naive", "--html", page});
  CHECK(matrix.exit_code == 2);
  CHECK(matrix.err.find("--html steps through a counterexample; it needs --counterexample") !=
        std::string::npos);
  CHECK(!std::ifstream(page).good());
}

TEST_CASE("check never writes a picture over the consumer file it grades", "[html][files][cli]") {
  // Mutation caught: no check before the output is created (the student's file would be
  // replaced by a page or a timeline).
  TempDir dir;
  const std::string file = dir.File("mine.toml");
  const std::string text = ReadFile(Example("check-then-process"));
  WriteFile(file, text);
  for (const char* option : {"--html", "--timeline"}) {
    INFO(option);
    CliResult r = RunCli({"check", file, option, file});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("that is the consumer file") != std::string::npos);
    CHECK(ReadFile(file) == text);
  }
}

TEST_CASE("run --file --html: a lesson's cache is shown beside the database", "[html][cli]") {
  // Mutation caught: the lesson's cache opened somewhere the probe does not look (or
  // not at all): the page would never show CacheKeys.
  TempDir dir;
  const std::string page = dir.File("cache.html");
  CliResult r = RunCli({"run", "--file",
                        std::string(DEDUPSIM_SOURCE_DIR) + "/examples/scenarios/cache-crash.toml",
                        "--html", page});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json data = PageData(ReadFile(page));
  std::vector<size_t> set = StepsWith(data, "INSERT CacheKeys");
  REQUIRE(set.size() == 2);  // the first delivery sets it, the redelivery finds it
  CHECK(CellAfter(data, set[0], "cache", "CacheKeys", "Key").find("inventory.reserve-stock:") == 0);
  const size_t last = data["steps"].size() - 1;
  CHECK(CellAfter(data, last, "database", "StockItems", "Reserved") == "0");
}

// Item 7 (concurrent's page): each actor is in one lock state per step (step 13 said "B
// holds the write lock" and "B waits for the write lock" at once), a lock take or release
// is no step of its own, and A's changes light up at its COMMIT, the only step that
// changes a table after the set-up. Mutation caught: lock events made steps (the
// `continue` in PageData dropped: "write lock taken/released" steps, the changes shown at
// "write lock released" and none at the COMMIT, as the issue saw); the delivery chip set
// to the opening delivery's number (`count = e.delivery`), not the highest so far.
TEST_CASE("run concurrent --html: one lock state per actor, the changes at the COMMIT",
          "[html][cli]") {
  TempDir dir;
  const std::string page = dir.File("concurrent.html");
  CliResult r = RunCli({"run", "concurrent", "--seed", "1", "--html", page});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json data = PageData(ReadFile(page));
  std::vector<size_t> changed;
  bool waited = false;
  int highest = 0;  // m1's delivery count so far
  for (size_t i = 0; i < data["steps"].size(); ++i) {
    const auto& step = data["steps"][i];
    const std::string text = step["text"];
    INFO("step " << i + 1 << ": " << text);
    CHECK(text.find("lock taken") == std::string::npos);
    CHECK(text.find("lock released") == std::string::npos);
    std::set<std::string> actors;
    for (const auto& fact : step["facts"]) {
      const std::string f = fact;
      CHECK(f.rfind("Consumer ", 0) == 0);
      CHECK(actors.insert(f.substr(0, f.find(' ', 9))).second);  // one fact per actor
      waited = waited || f.find("Consumer B waits") == 0;
    }
    if (!step["diff"].empty() && step["kind"] != "reset") changed.push_back(i);
    // m1's count, once the broker handed out delivery 2, stays 2 though A's delivery 1
    // opens after it (fourth walkthrough: "m1: delivery 1" after step 5 delivered 2).
    const int count = step["deliveries"].value("m1", 0);
    CHECK(count >= highest);
    highest = std::max(highest, count);
  }
  CHECK(highest == 2);
  CHECK(waited);
  REQUIRE(changed.size() == 1);
  const auto& commit = data["steps"][changed[0]];
  CHECK(commit["text"] == "Consumer A: COMMIT → ok");
  CHECK(commit["diff"]["database/Inbox"]["added"] == nlohmann::json::array({0}));
  CHECK(commit["diff"]["database/StockItems"]["changed"].size() == 1);
}

// SQLite takes the write lock when a statement starts to write, before it checks the key:
// the inbox's duplicate INSERT failed with 1555 and its transaction held the lock until
// its ROLLBACK. Every traced connection notes its takes and releases (not only a racing
// pair's), and each picture says so: the page's fact at that step, the diagram's answer to
// the INSERT, the timeline's card and its stripe. Mutation caught: Connection::WatchesLock
// back to `return busy_->keep_history;` (no lock events outside the racing lessons: the
// page said "Consumer A is in a transaction" at the failed INSERT).
TEST_CASE("run inbox: the duplicate's INSERT holds the write lock in every picture",
          "[html][cli]") {
  TempDir dir;
  const std::string page = dir.File("inbox.html");
  const std::string svg = dir.File("inbox.svg");
  CliResult r = RunCli({"run", "inbox", "--seed", "1", "--html", page, "--timeline", svg,
                        "--diagram", "mermaid"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json data = PageData(ReadFile(page));
  const std::vector<size_t> duplicate = StepsWith(data, "INSERT Inbox → duplicate key (1555)");
  REQUIRE(duplicate.size() == 1);
  CHECK(data["steps"][duplicate[0]]["facts"] ==
        nlohmann::json::array({"Consumer A holds the write lock"}));
  const std::vector<size_t> rollback = StepsWith(data, "Consumer A: ROLLBACK");
  REQUIRE(rollback.size() == 1);
  CHECK(data["steps"][rollback[0]]["facts"].empty());  // released with the ROLLBACK
  CHECK(r.out.find("DB-->>CA: duplicate key (1555), write lock taken\n") != std::string::npos);
  CHECK(r.out.find("DB-->>CA: ok, write lock released\n") != std::string::npos);
  const std::string timeline = ReadFile(svg);
  CHECK(timeline.find("write lock taken") != std::string::npos);
  CHECK(timeline.find("<rect class=\"held\" x=") != std::string::npos);
}

// Each section of a page shows its own tables (fourth walkthrough: `run everything --html`
// showed all seven tables, AuditLog and ShipmentRequests among them, in every lesson):
// those a statement of the section named or that held a row at one of its steps. naive
// writes only StockItems; outbox its Outbox and ShipmentRequests. Mutation caught: the
// tables shown once for the whole page (a table that held a row in outbox shown in naive).
TEST_CASE("run --html: each section shows the tables its steps used", "[html][cli]") {
  TempDir dir;
  const std::string page = dir.File("two.html");
  CliResult r = RunCli({"run", "outbox", "naive", "--seed", "1", "--html", page});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json data = PageData(ReadFile(page));
  REQUIRE(data["sections"].size() == 2);
  const auto names = [&](size_t section) {
    std::set<std::string> out;
    for (const auto& [name, on] : data["sections"][section]["shown"].items()) {
      if (on) out.insert(name);
    }
    return out;
  };
  CHECK(names(1) == std::set<std::string>{"database/StockItems"});
  const std::set<std::string> outbox = names(0);
  for (const char* table : {"database/Outbox", "database/ShipmentRequests", "database/Inbox",
                            "database/StockItems"}) {
    CHECK(outbox.count(table) == 1);
  }
}

// ack-first: Consumer A receives its delivery, then acks it (sixth walkthrough: the ack was
// sent before the "receives" step was recorded, so the page said "Broker: an ack for m1
// arrives" before A received m1, and no view drew A acking). Mutation caught: ack-first's
// receiver store opened after broker->Ack (or OpenQuietStore for it).
TEST_CASE("run ack-first --html: Consumer A receives m1, then acks it", "[html][cli]") {
  TempDir dir;
  const std::string page = dir.File("ack-first.html");
  CliResult r = RunCli({"run", "ack-first", "--seed", "1", "--html", page});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json data = PageData(ReadFile(page));
  const std::vector<size_t> received = StepsWith(data, "Consumer A receives m1, delivery 1");
  const std::vector<size_t> acked = StepsWith(data, "Consumer A: ack m1");
  REQUIRE(received.size() == 1);
  REQUIRE(acked.size() == 1);
  CHECK(received[0] < acked[0]);
  CHECK(StepsWith(data, "Broker: an ack for m1").empty());
}

// A settle on the broker's lane (sent by the main process for a child's delivery) is said
// as the broker got it, never as the broker's act ("Broker: ack m1" read as if the broker
// acked). Mutation caught: WordsOnLane (lanes.cpp) returning the words unchanged.
// A step read after another process's steps says that its changes cover them (sixth
// walkthrough: the ack's step showed A's committed Inbox row and Reserved as its own
// changes). Mutation caught: unread_commits never filled (the COMMIT left unnamed).
TEST_CASE("run concurrent --instances processes --html: the ack arrives, A's commit is named",
          "[html][cli]") {
  TempDir dir;
  const std::string page = dir.File("concurrent.html");
  CliResult r = RunCli({"run", "concurrent", "--instances", "processes", "--seed", "1", "--html",
                        page});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json data = PageData(ReadFile(page));
  for (const auto& step : data["steps"]) {
    CHECK(step["text"].get<std::string>().rfind("Broker: ack ", 0) == std::string::npos);
  }
  const std::vector<size_t> arrived =
      StepsWith(data, "Broker: an ack for m1 arrives: removed from the queue");
  REQUIRE(arrived.size() == 1);
  const nlohmann::json& step = data["steps"][arrived[0]];
  CHECK_FALSE(step["diff"].empty());
  CHECK(step["note"].get<std::string>().find("Consumer A's COMMIT (child process 1)") !=
        std::string::npos);
}

// A savepoint's statements are steps of their own kind, in the same words on the page, in
// the diagram and on the timeline (StepLabel), read from the database's own reading of the
// statement (SQLite's authorizer). Mutation caught: SQLITE_SAVEPOINT left unread (the page
// said "OTHER -> ok" for SAVEPOINT, ROLLBACK TO and RELEASE; the diagram "CA->>DB: OTHER").
TEST_CASE("a savepoint's steps are named as such in every view", "[html][cli]") {
  TempDir dir;
  const std::string page = dir.File("d.html");
  const std::string svg = dir.File("d.svg");
  CliResult r = RunCli({"run", "duplicate-in-transaction", "--format", "json", "--diagram",
                        "mermaid", "--html", page, "--timeline", svg});
  REQUIRE(r.exit_code == 0);
  const nlohmann::json run = nlohmann::json::parse(r.out);
  nlohmann::json data = PageData(ReadFile(page));
  const std::string diagram = run["diagram"];
  const std::string timeline = ReadFile(svg);
  for (const std::string label : {"SAVEPOINT", "ROLLBACK TO SAVEPOINT", "RELEASE SAVEPOINT"}) {
    INFO(label);
    CHECK_FALSE(StepsWith(data, "Consumer A: " + label + " \u2192 ok").empty());
    CHECK(diagram.find("CA->>DB: " + label + "\n") != std::string::npos);
    CHECK(timeline.find(label + ": ok") != std::string::npos);
  }
  for (const auto& s : data["steps"]) {
    CHECK(s["text"].get<std::string>().find("OTHER") == std::string::npos);
  }
  CHECK(diagram.find("OTHER") == std::string::npos);
  CHECK(timeline.find("OTHER") == std::string::npos);
}

namespace {

// The page a run writes, as its data.
nlohmann::json RunPage(const std::vector<std::string>& run_args) {
  TempDir dir;
  const std::string page = dir.File("p.html");
  std::vector<std::string> args{"run"};
  args.insert(args.end(), run_args.begin(), run_args.end());
  for (const char* a : {"--seed", "1", "--html"}) args.emplace_back(a);
  args.push_back(page);
  CliResult r = RunCli(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return PageData(ReadFile(page));
}

}  // namespace

// The page's step title says right or wrong as the diagram's note does, with its ✓ or ✗
// (third walkthrough: the page's "outcome: Processed" was coloured, the diagram's card said
// "outcome: Processed ✗"), and its line carries each judged figure with its mark, as the
// coloured terminal line does. Mutations caught: html_steps.cpp's step text without
// `+ ToneMark(words.tone)`; JudgedPieces' piece without `+ std::string(Mark(mark.correct))`.
TEST_CASE("run naive --html: the step titles and the line carry the diagram's marks",
          "[html][cli][color]") {
  const nlohmann::json data = RunPage({"naive"});
  std::vector<std::string> outcomes;
  for (const auto& step : data["steps"]) {
    const std::string text = step["text"];
    if (text.find("outcome:") != std::string::npos) outcomes.push_back(text);
  }
  CHECK(outcomes == std::vector<std::string>{"Consumer A: outcome: Processed ✓",
                                             "Consumer A: outcome: Processed ✗"});
  CHECK(data["sections"][0]["line"].back() == nlohmann::json::array({"Dune reserved: 4 ✗", false}));
}

// A sub-run sends messages of its own: the page shows no delivery of the sub-run before
// (third walkthrough: concurrent-different's "different books" still listed m1 and m2), and
// its set-up is one reset step, Emma stocked in it (it was a second "reset the database"
// step). Mutations caught: html_steps.cpp without `if (e.kind == "part") deliveries.clear();`;
// common.cpp's Restock noting a reset for each book it adds
// (`env.recorder.NoteReset(...)` in its AddStock loop, as AddStock did).
TEST_CASE("run concurrent-different --html: each sub-run starts with no deliveries, one reset",
          "[html][cli]") {
  const nlohmann::json data = RunPage({"concurrent-different"});
  std::string previous_kind;
  int parts = 0;
  for (const auto& step : data["steps"]) {
    INFO(step["text"].get<std::string>());
    CHECK_FALSE((step["kind"] == "reset" && previous_kind == "reset"));
    previous_kind = step["kind"];
    if (step["kind"] == "part") {
      ++parts;
      CHECK(step["deliveries"].empty());
    }
    if (parts == 2 && step["kind"] == "open") {
      for (const auto& [message, n] : step["deliveries"].items()) {
        CHECK((message == "m3" || message == "m4"));
      }
    }
  }
  CHECK(parts == 2);
}

}  // namespace dedupsim::testing::step_through_test
