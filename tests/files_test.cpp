// Consumer files: each step kind does what docs/files.md says, each mistake is reported as
// FILE:LINE:COLUMN with what was expected (and exits 2 from the command), and the grader
// judges right and wrong consumers a student would plausibly write.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "explore/explorer.h"
#include "explore/faults.h"
#include "explore/strategies.h"
#include "files/consumer_file.h"
#include "files/file_strategy.h"
#include "files/grade.h"
#include "support.h"

namespace dedupsim::testing::files_test {

namespace {

using namespace dedupsim::explore;
using dedupsim::explore::Strategy;

constexpr const char* kHead = "effect = \"stock\"\nconsumer = \"inventory.reserve-stock\"\n";
constexpr const char* kInsertInbox =
    "INSERT INTO Inbox (MessageId, Consumer, ReceivedAt, CompletedAt) "
    "VALUES (:MessageId, :Consumer, :Now, :Now)";
constexpr const char* kReserve =
    "UPDATE StockItems SET Reserved = Reserved + :Quantity WHERE BookId = :BookId";

std::string ErrorOf(const std::string& text) {
  try {
    files::ParseConsumerFile(text, "student.toml");
  } catch (const files::FileError& e) {
    return e.what();
  }
  return "";
}

// Grades text under the faults named (all when empty).
files::Grade GradeText(const std::string& text, std::vector<std::string> fault_names = {}) {
  static std::vector<std::unique_ptr<files::FileStrategy>> keep;  // outlive the explorer
  keep.push_back(std::make_unique<files::FileStrategy>(files::ParseConsumerFile(text, "t.toml")));
  files::FileStrategy& file = *keep.back();
  const Strategy* extra[] = {&file.strategy()};
  Explorer explorer(ExploreOptions{}, extra);
  file.LearnCrashPoints(explorer);
  std::vector<const Fault*> faults;
  for (const std::string& n : fault_names) faults.push_back(FindFault(n));
  if (faults.empty()) faults.assign(AllFaults().begin(), AllFaults().end());
  return files::GradeStrategy(explorer, file.strategy(), faults, {});
}

const files::GradedCell& CellOf(const files::Grade& g, const std::string& fault) {
  for (const files::GradedCell& c : g.cells) {
    if (c.cell.fault->name == fault) return c;
  }
  throw std::logic_error("no cell " + fault);
}

std::vector<std::string> StepsOf(const std::string& text) {
  files::FileStrategy file(files::ParseConsumerFile(text, "t.toml"));
  const Strategy* extra[] = {&file.strategy()};
  Explorer explorer(ExploreOptions{}, extra);
  return explorer.CleanDeliverySteps(file.strategy());
}

}  // namespace

TEST_CASE("consumer file errors name FILE:LINE:COLUMN and what was expected", "[files]") {
  // Mutation caught: positions from the table instead of the key, or no position at all.
  CHECK(ErrorOf(std::string(kHead) + "[[step]]\nsqll = \"SELECT 1\"\n")
            .rfind("student.toml:4:1: unknown step key 'sqll' (expected a step: begin, commit,",
                   0) == 0);
  std::string unknown_param = ErrorOf(std::string(kHead) +
                                      "[[step]]\nsql = \"UPDATE StockItems SET Reserved = "
                                      ":Qty WHERE BookId = :BookId\"\n");
  // At the parameter itself (column 41), not at the string.
  CHECK(unknown_param.rfind("student.toml:4:41: unknown parameter :Qty (expected one of "
                            ":MessageId, :Consumer, :BookId, :Quantity, :OrderId, :Now) in: UPDATE",
                            0) == 0);
  CHECK(ErrorOf(std::string(kHead) +
                "[[step]]\nhook = \"BeforeCommit\"\n[[step]]\nhook = \"BeforeCommit\"\n") ==
        "student.toml:6:8: hook BeforeCommit is named twice (first at line 4, column 8); each "
        "hook point needs its own name");
  CHECK(ErrorOf(std::string(kHead) + "[[step]]\nsql = \"SELECT 1 FROM Inboxx WHERE MessageId = "
                                     ":MessageId\"\n") ==
        "student.toml:4:8: SQL does not prepare: no such table: Inboxx (in: SELECT 1 FROM Inboxx "
        "WHERE MessageId = :MessageId)");
  CHECK(ErrorOf(std::string(kHead) + "[[step]]\nsql = \"ATTACH 'other.db' AS o\"\n")
            .rfind("student.toml:4:8: ATTACH (another database file) is not allowed: a sql step "
                   "reads or writes rows of the run's tables",
                   0) == 0);
  CHECK(ErrorOf(std::string(kHead) + "[[step]]\nsql = \"" + kInsertInbox +
                "\"\non-duplicate = \"ignore\"\n")
            .rfind("student.toml:5:16: unknown action 'ignore' (expected one of continue, "
                   "skip-and-ack, rollback-and-ack, reconcile, throw, go-to LABEL)",
                   0) == 0);
  CHECK(ErrorOf(std::string(kHead) + "[[step]]\ncommit = true\n") ==
        "student.toml:3:1: commit with no transaction open (expected a begin step before)");
  CHECK(ErrorOf(std::string(kHead) + "[[step]]\nbegin = \"deferred\"\n[[step]]\nsql = \"" +
                kReserve + "\"\n")
            .rfind("student.toml:3:1: this transaction is never committed or rolled back", 0) == 0);
  CHECK(ErrorOf(std::string(kHead) + "[[step]]\nsql = \"" + kInsertInbox +
                "\"\non-duplicate = \"rollback-and-ack\"\n")
            .rfind("student.toml:3:1: on-duplicate = \"rollback-and-ack\" but no transaction is "
                   "open here",
                   0) == 0);
  CHECK(ErrorOf(std::string(kHead) + "[[step]]\nsql = \"SELECT 1 FROM Inbox\"\non-duplicate = "
                                     "\"skip-and-ack\"\n")
            .rfind("student.toml:5:1: 'on-duplicate' does not apply to a sql step that reads rows "
                   "(expected: on-no-row, on-row, store)",
                   0) == 0);
  CHECK(ErrorOf("effect = \"stock\"\n[[step]\n").rfind("student.toml:2:", 0) == 0);  // TOML syntax
  CHECK(ErrorOf("[[step]]\nsql = \"SELECT 1\"\n") ==
        "student.toml:1:1: missing effect = \"stock\" or \"email\" (what exactly-once is counted "
        "on)");
  CHECK(ErrorOf(std::string(kHead) + "[[step]]\nbegin = \"serializable\"\n") ==
        "student.toml:4:9: unknown transaction kind 'serializable' (expected deferred, immediate "
        "or exclusive)");
}

TEST_CASE("check exits 2 with the file's error and reads nothing else", "[files][cli]") {
  TempDir dir;
  std::string path = dir.File("bad.toml");
  std::string text = std::string(kHead) + "[[step]]\nhook = \"A\"\n[[step]]\nhook = \"A\"\n";
  WriteFile(path, text);
  CliResult r = RunCli({"check", path});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.rfind(path + ":6:8: hook A is named twice", 0) == 0);
  CHECK(ReadFile(path) == text);  // only read
  CliResult missing = RunCli({"check", dir.File("none.toml")});
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.rfind(dir.File("none.toml") + ": cannot be read", 0) == 0);
}

TEST_CASE("each step kind is the step the explorer sees", "[files]") {
  // Mutation caught: begin ignoring its kind, publish or send not going through the gate.
  CHECK(StepsOf(std::string(kHead) + "[[step]]\nbegin = \"immediate\"\n[[step]]\nsql = \"" +
                kReserve +
                "\"\n[[step]]\npublish = \"StockReserved\"\n[[step]]\nrollback = true\n") ==
        std::vector<std::string>{"BEGIN IMMEDIATE", "UPDATE StockItems", "Broker.Publish",
                                 "ROLLBACK"});
  CHECK(StepsOf(
            "effect = \"email\"\n[[step]]\nsend-email = true\n[[step]]\nhook = \"AfterSend\"\n") ==
        std::vector<std::string>{"EmailProvider.Send", "AfterSend"});
  CHECK(StepsOf(
            "effect = \"email\"\n[[step]]\nsend-email = true\nidempotency-key = \":OrderId\"\n") ==
        std::vector<std::string>{"BEGIN IMMEDIATE", "INSERT SentEmails", "INSERT ProviderRequests",
                                 "COMMIT"});
  // on-no-row ends the delivery: nothing after it runs.
  CHECK(StepsOf(std::string(kHead) +
                "[[step]]\nsql = \"SELECT 1 FROM Inbox WHERE MessageId = :MessageId\"\non-no-row = "
                "\"skip-and-ack\"\n[[step]]\nsql = \"" +
                kReserve + "\"\n") == std::vector<std::string>{"SELECT Inbox"});
}

TEST_CASE("branches: go-to a label, ask-provider and end", "[files]") {
  const std::string select =
      "[[step]]\nsql = \"SELECT CompletedAt FROM Inbox WHERE MessageId = :MessageId\"\n";
  // Mutations caught: a go-to that falls through to the next step instead (the hook Other
  // would run on a first delivery), an end that does not end (the duplicate would go on
  // to reserve again: twice).
  const std::string branching =
      std::string(kHead) + select +
      "on-no-row = \"go-to work\"\non-row = \"go-to other\"\n[[step]]\nlabel = \"other\"\nhook = "
      "\"Other\"\n[[step]]\nend = \"skipped\"\n[[step]]\nlabel = \"work\"\nsql = \"" +
      kReserve + "\"\n[[step]]\nsql = \"" + kInsertInbox + "\"\n[[step]]\nend = \"processed\"\n";
  CHECK(StepsOf(branching) ==
        std::vector<std::string>{"SELECT Inbox", "UPDATE StockItems", "INSERT Inbox"});
  files::Grade duplicate = GradeText(branching, {"duplicate"});
  CHECK(CellOf(duplicate, "duplicate").cell.counts[Index(explore::Outcome::kOnce)] == 1);
  // ask-provider reads the provider's records through the gate, then goes its way.
  CHECK(StepsOf("effect = \"email\"\n[[step]]\nask-provider = \":MessageId\"\non-sent = "
                "\"skip-and-ack\"\n[[step]]\nsend-email = true\nidempotency-key = "
                "\":MessageId\"\n") ==
        std::vector<std::string>{"SELECT SentEmails", "BEGIN IMMEDIATE", "INSERT SentEmails",
                                 "INSERT ProviderRequests", "COMMIT"});
  // The mistakes, each where it is written.
  CHECK(ErrorOf(std::string(kHead) + select + "on-no-row = \"go-to nowhere\"\n") ==
        "student.toml:3:1: on-no-row = \"go-to nowhere\": no step has label = \"nowhere\" "
        "(labels: none)");
  CHECK(ErrorOf(std::string(kHead) + "[[step]]\nlabel = \"top\"\nsql = \"" + kReserve + "\"\n" +
                select + "on-no-row = \"go-to top\"\n")
            .rfind("student.toml:6:1: on-no-row = \"go-to top\" jumps back to line 3: a go-to "
                   "jumps only to a step further down",
                   0) == 0);
  CHECK(ErrorOf(std::string(kHead) + "[[step]]\nend = \"processed\"\n[[step]]\nsql = \"" +
                kReserve + "\"\n")
            .rfind("student.toml:5:1: this step is never reached", 0) == 0);
  CHECK(ErrorOf(std::string(kHead) + "[[step]]\nbegin = \"deferred\"\n[[step]]\nend = "
                                     "\"processed\"\n") ==
        "student.toml:5:1: end with the transaction begun at line 3 still open (expected a "
        "commit or rollback step before)");
  CHECK(ErrorOf(std::string(kHead) + select +
                "on-row = \"go-to x\"\n[[step]]\nbegin = "
                "\"deferred\"\n[[step]]\nlabel = \"x\"\nsql = \"" +
                kReserve + "\"\n[[step]]\ncommit = true\n")
            .rfind("student.toml:8:1: this step is reached with a transaction open (from line 6) "
                   "and with none (from line 3)",
                   0) == 0);
  CHECK(ErrorOf(std::string(kHead) + "[[step]]\nlabel = \"a\"\nhook = \"H1\"\n[[step]]\nlabel = "
                                     "\"a\"\nhook = \"H2\"\n") ==
        "student.toml:6:1: label a is given twice (first at line 3, column 1); each label names "
        "one step");
  CHECK(ErrorOf(std::string(kHead) + "[[step]]\nend = \"done\"\n")
            .rfind("student.toml:4:7: unknown end 'done' (expected processed", 0) == 0);
  CHECK(ErrorOf(std::string(kHead) + select + "on-no-row = \"goto x\"\n")
            .rfind("student.toml:5:13: unknown action 'goto x'", 0) == 0);
}

TEST_CASE("email-reconcile.toml settles a record left in progress instead of flagging it",
          "[files]") {
  // Mutation caught: ask-provider always answering "sent" (after a crash before the send
  // the record is completed with no email: lost). Always "never sent" is turned away by the
  // provider's key (still once here); the equivalence test catches it by its extra steps.
  files::Grade g = GradeText(
      ReadFile(std::string(DEDUPSIM_SOURCE_DIR) + "/examples/consumers/email-reconcile.toml"),
      {"crash", "duplicate"});
  CHECK(g.Passed());
  CHECK(CellOf(g, "crash").cell.counts[Index(explore::Outcome::kReconcile)] == 0);
  CHECK(CellOf(g, "crash").cell.Failing() == 0);
  CHECK(CellOf(g, "crash").cell.schedules > 1);
}

TEST_CASE("on-zero-rows = throw leaves the message unacked, the broker gives it up", "[files]") {
  // Mutation caught: throw treated as an ack (the cell would be lost, not error).
  files::Grade g =
      GradeText(std::string(kHead) +
                    "[[step]]\nsql = \"UPDATE StockItems SET Reserved = Reserved + "
                    ":Quantity WHERE BookId = 'no such book'\"\non-zero-rows = \"throw\"\n",
                {"duplicate"});
  const files::GradedCell& c = CellOf(g, "duplicate");
  CHECK(c.cell.counts[Index(explore::Outcome::kError)] == 1);  // never acked, given up
  REQUIRE(c.replay);
  CHECK(c.replay->figures.deliveries == 10);  // five attempts for each of the two copies
}

TEST_CASE("an idempotency key makes the provider turn the resend away", "[files]") {
  // Mutation caught: the key ignored (the provider would send twice under producer-duplicate).
  std::string send = "effect = \"email\"\n[[step]]\nsend-email = true\n";
  files::Grade without = GradeText(send, {"producer-duplicate"});
  files::Grade keyed = GradeText(send + "idempotency-key = \":OrderId\"\n", {"producer-duplicate"});
  CHECK(CellOf(without, "producer-duplicate").cell.counts[Index(explore::Outcome::kTwice)] == 1);
  CHECK(CellOf(keyed, "producer-duplicate").cell.Failing() == 0);
}

TEST_CASE("a file's own table is created once and emptied before every schedule", "[files]") {
  // Mutation caught: no reset of the file's tables (the second schedule would skip: lost).
  std::string text = std::string(kHead) +
                     "schema = \"CREATE TABLE IF NOT EXISTS Seen (MessageId TEXT PRIMARY KEY)\"\n"
                     "[[step]]\nbegin = \"deferred\"\n"
                     "[[step]]\nsql = \"INSERT INTO Seen (MessageId) VALUES (:MessageId)\"\n"
                     "on-duplicate = \"rollback-and-ack\"\n"
                     "[[step]]\nsql = \"" +
                     std::string(kReserve) + "\"\n[[step]]\ncommit = true\n";
  files::Grade g = GradeText(text, {"crash", "concurrent"});
  CHECK(g.Passed());
  CHECK(CellOf(g, "crash").cell.schedules == 4);
}

TEST_CASE("the grader's verdicts on consumers a student would write", "[files]") {
  SECTION("the inbox, right: passes") {
    files::Grade g =
        GradeText(std::string(kHead) + "[[step]]\nbegin = \"deferred\"\n[[step]]\nsql = \"" +
                  kInsertInbox + "\"\non-duplicate = \"rollback-and-ack\"\n[[step]]\nsql = \"" +
                  kReserve + "\"\n[[step]]\ncommit = true\n");
    CHECK(g.Passed());
  }
  SECTION("the claim after the work, in its own transaction: twice after a crash") {
    files::Grade g = GradeText(
        std::string(kHead) + "[[step]]\nbegin = \"deferred\"\n[[step]]\nsql = \"" + kReserve +
        "\"\n[[step]]\ncommit = true\n[[step]]\nbegin = \"deferred\"\n[[step]]\nsql = \"" +
        kInsertInbox + "\"\non-duplicate = \"rollback-and-ack\"\n[[step]]\ncommit = true\n");
    CHECK_FALSE(g.Passed());
    const files::GradedCell& crash = CellOf(g, "crash");
    CHECK_FALSE(crash.passed);
    CHECK(crash.cell.counts[Index(explore::Outcome::kTwice)] > 0);
    REQUIRE(crash.cell.shortest);
    // Between the two commits: the stock is reserved, the claim is not.
    CHECK(crash.cell.shortest->variant == "crash at INSERT Inbox");
  }
  SECTION("a check inside the transaction, on a table without a key: SQLite serialises it") {
    // On SQLite this plausible mistake holds under every explored fault: the second copy's
    // deferred transaction read an old snapshot, so its first write fails (BUSY_SNAPSHOT),
    // the message is redelivered and the check then sees the row. The grader says so
    // rather than guess; on a database that lets both writers through (PostgreSQL's READ
    // COMMITTED) it would reserve twice. Mutation caught: a busy or snapshot error treated
    // as an ack would make a copy lost; the redelivery not re-running the check, twice.
    files::Grade g =
        GradeText(std::string(kHead) +
                  "schema = \"CREATE TABLE IF NOT EXISTS Seen (MessageId TEXT)\"\n"
                  "[[step]]\nbegin = \"deferred\"\n"
                  "[[step]]\nsql = \"SELECT 1 FROM Seen WHERE MessageId = :MessageId\"\non-row = "
                  "\"skip-and-ack\"\n"
                  "[[step]]\nsql = \"" +
                  kReserve +
                  "\"\n"
                  "[[step]]\nsql = \"INSERT INTO Seen (MessageId) VALUES (:MessageId)\"\n"
                  "[[step]]\ncommit = true\n");
    CHECK(CellOf(g, "crash").passed);
    CHECK(CellOf(g, "duplicate").passed);
    const files::GradedCell& concurrent = CellOf(g, "concurrent");
    INFO(files::FormatGrade(g, false));
    CHECK(concurrent.passed);
    CHECK(concurrent.cell.Failing() == 0);
  }
  SECTION("a key without the consumer name: the other subscriber's message is lost") {
    files::Grade g = GradeText(
        std::string(kHead) +
        "partner = \"shared-key-email\"\n[[step]]\nbegin = \"deferred\"\n"
        "[[step]]\nsql = \"INSERT INTO InboxByMessageId (MessageId, Consumer, ReceivedAt, "
        "CompletedAt) "
        "VALUES (:MessageId, :Consumer, :Now, :Now)\"\non-duplicate = \"rollback-and-ack\"\n"
        "[[step]]\nsql = \"" +
        kReserve + "\"\n[[step]]\ncommit = true\n");
    CHECK(CellOf(g, "crash").passed);
    const files::GradedCell& second = CellOf(g, "second-subscriber");
    CHECK_FALSE(second.passed);
    CHECK(second.cell.counts[Index(explore::Outcome::kLost)] > 0);
  }
  SECTION("an email sent before the record: twice after a crash") {
    files::Grade g = GradeText(
        "effect = \"email\"\nconsumer = \"notifications.stock-reserved-email\"\n"
        "[[step]]\nsql = \"SELECT 1 FROM Inbox WHERE MessageId = :MessageId AND Consumer = "
        ":Consumer\"\n"
        "on-row = \"skip-and-ack\"\n[[step]]\nsend-email = true\n"
        "[[step]]\nsql = \"" +
        std::string(kInsertInbox) + "\"\non-duplicate = \"skip-and-ack\"\n");
    const files::GradedCell& crash = CellOf(g, "crash");
    CHECK_FALSE(crash.passed);
    REQUIRE(crash.cell.shortest);
    CHECK(crash.cell.shortest->variant == "crash at INSERT Inbox");
    CHECK(crash.cell.shortest->outcome == explore::Outcome::kTwice);
  }
}

TEST_CASE("dedupsim check: inbox exits 0, check-then-process exits 1 with its crash schedule",
          "[files][cli]") {
  std::string dir = std::string(DEDUPSIM_SOURCE_DIR) + "/examples/consumers/";
  CliResult ok = RunCli({"check", dir + "inbox.toml"});
  CHECK(ok.exit_code == 0);
  CHECK(ok.out.find("(inbox): passes") != std::string::npos);
  CliResult bad = RunCli({"check", dir + "check-then-process.toml"});
  CHECK(bad.exit_code == 1);
  CHECK(bad.out.find("crash (fails the check): 2 of 4 schedules fail; the shortest: 2 deliveries, "
                     "7 steps, crash at AfterStockCommitted, ends twice:\n") != std::string::npos);
  CHECK(bad.out.find("  7 steps:\n"
                     "    1  A  SELECT Inbox\n    2  A  UPDATE StockItems\n"
                     "    3  A  crash at AfterStockCommitted\n") != std::string::npos);
  // --expect grades the broken behaviour as the point of the exercise.
  CliResult expected = RunCli({"check", dir + "check-then-process.toml", "--expect", "crash=twice",
                               "--expect", "concurrent=twice", "--format", "json"});
  CHECK(expected.exit_code == 0);
  auto j = nlohmann::json::parse(expected.out);
  CHECK(j["passed"] == true);
  CHECK(j["consumers"][0]["cells"][1]["fault"] == "crash");
  CHECK(j["consumers"][0]["cells"][1]["expected"] == "twice");
  CHECK(j["consumers"][0]["cells"][1]["counterexample"]["length"] == 7);
  // The counterexample's views come from its replayed trace.
  TempDir out;
  CliResult views = RunCli({"check", dir + "check-then-process.toml", "--fault", "crash",
                            "--diagram", "mermaid", "--timeline", out.File("t.svg")});
  CHECK(views.exit_code == 1);
  CHECK(views.out.find("%% check-then-process under crash: crash at AfterStockCommitted\n"
                       "sequenceDiagram\n") != std::string::npos);
  CHECK(views.out.find("Note over CA: crash at AfterStockCommitted") != std::string::npos);
  std::string svg = ReadFile(out.File("t.svg"));
  CHECK(svg.find("check-then-process under crash") != std::string::npos);
  CliResult wrong = RunCli({"check", dir + "inbox.toml", "--expect", "crash=twice"});
  CHECK(wrong.exit_code == 1);
  CHECK(RunCli({"check", dir + "inbox.toml", "--expect", "crash=often"}).exit_code == 2);
}

TEST_CASE("what a publish step publishes is counted in the invariant", "[files]") {
  // Mutation caught: the published messages left out of the count (both consumers below
  // would pass the crash fault: the stock is reserved exactly once in each).
  const std::string claim_and_reserve = std::string(kHead) +
                                        "[[step]]\nbegin = \"deferred\"\n[[step]]\nsql = \"" +
                                        kInsertInbox +
                                        "\"\non-duplicate = \"rollback-and-ack\"\n[[step]]\nsql = "
                                        "\"" +
                                        kReserve + "\"\n";
  SECTION("published after the commit: a crash in between loses the message") {
    files::Grade g = GradeText(claim_and_reserve +
                                   "[[step]]\ncommit = true\n[[step]]\npublish = \"StockReserved\"\n",
                               {"crash", "duplicate"});
    const files::GradedCell& crash = CellOf(g, "crash");
    CHECK_FALSE(crash.passed);
    CHECK(crash.cell.counts[Index(explore::Outcome::kLost)] > 0);
    REQUIRE(crash.cell.shortest);
    CHECK(crash.cell.shortest->variant == "crash at Broker.Publish");
    CHECK(CellOf(g, "duplicate").passed);  // no crash: published once
  }
  SECTION("published inside the transaction: a crash before the commit publishes twice") {
    files::Grade g = GradeText(claim_and_reserve +
                                   "[[step]]\npublish = \"StockReserved\"\n[[step]]\ncommit = true\n",
                               {"crash", "duplicate"});
    const files::GradedCell& crash = CellOf(g, "crash");
    CHECK_FALSE(crash.passed);
    CHECK(crash.cell.counts[Index(explore::Outcome::kTwice)] > 0);
    CHECK(CellOf(g, "duplicate").passed);
  }
}

TEST_CASE("a sql step on the second store needs second-store = \"cache\"", "[files]") {
  // Mutation caught: store = ... accepted without a second store (it would run on the
  // database, or on nothing).
  CHECK(ErrorOf(std::string(kHead) +
                "[[step]]\nsql = \"SELECT 1 FROM CacheKeys WHERE Key = :MessageId\"\nstore = "
                "\"cache\"\n") ==
        "student.toml:5:9: store = \"cache\" names no second store of this file (expected "
        "second-store = \"cache\" at the top, then store = \"cache\")");
  CHECK(ErrorOf(std::string(kHead) + "second-store = \"redis\"\n[[step]]\nsql = \"" + kReserve + "\"\n") ==
        "student.toml:3:16: unknown second store 'redis' (expected cache: a dedup cache in its "
        "own file, table CacheKeys (Key, SetAt))");
  // Its SQL is prepared against the cache's table, not the database's.
  CHECK(ErrorOf(std::string(kHead) + "second-store = \"cache\"\n[[step]]\nsql = \"SELECT 1 FROM "
                                     "Inbox WHERE MessageId = :MessageId\"\nstore = \"cache\"\n")
            .rfind("student.toml:5:8: SQL does not prepare: no such table: Inbox", 0) == 0);
}

}  // namespace dedupsim::testing::files_test
