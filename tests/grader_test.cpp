// The grader against consumers a student would write (issue 25): each wrong consumer of
// tests/data/consumers/wrong fails at the fault of the class world that exposes it, with the
// outcome that says why; each consumer of tests/data/consumers/right (a shape of
// docs/files.md unlike the examples) passes every fault. Each verdict was predicted before the
// file was first run; the line over each row names the one mutation of the class world it
// catches.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "explore/explorer.h"
#include "explore/faults.h"
#include "files/consumer_file.h"
#include "files/file_strategy.h"
#include "files/grade.h"
#include "support.h"

namespace dedupsim::testing::grader_test {

namespace {

using explore::Outcome;

std::string Data(const std::string& name) {
  return std::string(DEDUPSIM_SOURCE_DIR) + "/tests/data/consumers/" + name;
}

// Grades the file in the class world (what `dedupsim check` does) under the faults named,
// every graded fault when none.
files::Grade GradeFile(const std::string& path, const std::vector<std::string>& names = {}) {
  static std::vector<std::unique_ptr<files::FileStrategy>> keep;  // outlive the explorer
  keep.push_back(std::make_unique<files::FileStrategy>(files::LoadConsumerFile(path)));
  files::FileStrategy& file = *keep.back();
  const explore::Strategy* extra[] = {&file.strategy()};
  explore::ExploreOptions options;
  options.graded = true;
  explore::Explorer explorer(options, extra);
  file.LearnCrashPoints(explorer);
  std::vector<const explore::Fault*> faults;
  for (const std::string& n : names) faults.push_back(explore::FindFault(n, explore::GradedFaults()));
  if (faults.empty()) faults.assign(explore::GradedFaults().begin(), explore::GradedFaults().end());
  files::Grade g = files::GradeStrategy(explorer, file.strategy(), faults, {});
  g.untaken = file.UntakenBranches();  // as check does
  return g;
}

const files::GradedCell& CellOf(const files::Grade& g, const std::string& fault) {
  for (const files::GradedCell& c : g.cells) {
    if (c.cell.fault->name == fault) return c;
  }
  throw std::logic_error("no cell " + fault);
}

// The schedules of the cell whose plan's variant starts with `variant` that ended so.
int64_t EndedIn(const files::GradedCell& c, const std::string& variant, Outcome o) {
  int64_t n = 0;
  for (const explore::VariantResult& v : c.cell.variants) {
    if (v.variant.rfind(variant, 0) == 0) n += v.counts[Index(o)];
  }
  return n;
}

struct Wrong {
  const char* file;
  const char* fault;    // the fault that exposes it
  const char* variant;  // the plan of that fault that does ("" any)
  Outcome outcome;      // how its schedules end there
};

}  // namespace

TEST_CASE("each wrong consumer fails at the fault that exposes it", "[grader]") {
  const Wrong wrong[] = {
      // Flags a clean delivery. Mutation: reconcile accepted where nothing called for it.
      {"2-always-reconcile.toml", "clean", "", Outcome::kReconcile},
      // Every redelivery throws on the key and is given up. Mutation: given up counted once.
      {"3-duplicate-throws.toml", "duplicate", "again 2 s later", Outcome::kError},
      // Its key holds :Now. Mutation: one clock for every delivery of a plan.
      {"4a-key-receive-time.toml", "duplicate", "again 2 s later", Outcome::kTwice},
      // Its key holds the day. Mutation: no redelivery across midnight.
      {"4b-key-day.toml", "duplicate", "again 5 s later, across midnight", Outcome::kTwice},
      // Overwrites Reserved. Mutation: stock starting at zero reserved.
      {"5-overwrite.toml", "clean", "", Outcome::kWrong},
      // InboxByMessageId, the shared table keyed on MessageId alone. Mutation: the partner
      // that shares InboxByMessageId runs only when the file names it.
      {"6-shared-key.toml", "second-subscriber", "with shared-key-email", Outcome::kLost},
      // One book per delivery. Mutation: the effect read by integer division (1/3 = 0:
      // lost, not wrong).
      {"7a-one-per-delivery.toml", "clean", "", Outcome::kWrong},
      // A fixed 3: right for the message under test, 3 for the order of 2. Mutation: the
      // order of 2 read as 3/2 = 1 reservation.
      {"7b-fixed-three.toml", "orders", "", Outcome::kWrong},
      // Looks for any consumer's record. Mutation: no partner writing Inbox.
      {"9-check-ignores-consumer.toml", "second-subscriber", "with email", Outcome::kLost},
      // Keyed on the book. Mutation: no second order of one book.
      {"10-key-by-book.toml", "orders", "", Outcome::kLost},
      // No WHERE. Mutation: one book on the shelf.
      {"11-no-where.toml", "clean", "", Outcome::kWrong},
      // Forgets its records after an hour. Mutation: no redelivery hours later.
      {"12-retention-one-hour.toml", "duplicate", "again 3 h later", Outcome::kTwice},
      // Flags a completed record. Mutation: a sequential duplicate not strict.
      {"13-reconcile-completed.toml", "duplicate", "again 2 s later", Outcome::kReconcile},
      {"14-duplicate-continues.toml", "duplicate", "again 2 s later", Outcome::kTwice},
      {"15-send-before-record.toml", "crash", "crash at INSERT Inbox", Outcome::kTwice},
      // A read-modify-write outside a transaction. Mutation: no two orders of one book at once.
      {"16-lost-update.toml", "concurrent", "two orders of Dune at once", Outcome::kLost},
  };
  for (const Wrong& w : wrong) {
    INFO(w.file);
    files::Grade g = GradeFile(Data(std::string("wrong/") + w.file), {w.fault});
    const files::GradedCell& cell = CellOf(g, w.fault);
    INFO(files::FormatGrade(g, false));
    CHECK_FALSE(g.Passed());
    CHECK_FALSE(cell.passed);
    CHECK(EndedIn(cell, w.variant, w.outcome) > 0);
  }
}

TEST_CASE("the counterexample's deliveries tell the key each record was written under",
          "[grader]") {
  // Keyed on the book: the second order's INSERT Inbox hits the first order's record. The
  // story shows both INSERTs' bound values, the same :BookId and two different messages.
  // Mutation caught: the class world's replay without the bound values (DeliveriesOf's
  // with_values false): two bare "INSERT Inbox" that explain nothing.
  files::Grade g = GradeFile(Data("wrong/10-key-by-book.toml"), {"orders"});
  const files::GradedCell& orders = CellOf(g, "orders");
  REQUIRE(orders.replay);
  const std::vector<explore::DeliveryAttempt>& d = orders.replay->deliveries;
  REQUIRE(d.size() >= 2);
  CHECK(d[0].message != d[1].message);
  auto key_of = [](const explore::DeliveryAttempt& a) {
    for (const std::string& did : a.did) {
      if (did.rfind("INSERT Inbox (:BookId=", 0) == 0) return did.substr(0, did.find(','));
    }
    return std::string("(no INSERT Inbox with its values)");
  };
  CHECK(key_of(d[0]) == key_of(d[1]));
  CHECK(key_of(d[0]).rfind("INSERT Inbox (:BookId=", 0) == 0);
  CHECK(d[1].did[1].find(": constraint") != std::string::npos);
  // An id is cut like the header's message id; a consumer's name is whole (9's mistake is
  // in which consumer a record names). Mutation caught: every value past 16 characters cut.
  CHECK(d[0].did[1].find(":BookId=" + d[0].did[1].substr(22, 8) + "\u2026") != std::string::npos);
  CHECK(d[0].did[1].find(":Consumer=inventory.reserve-stock") != std::string::npos);
}

TEST_CASE("a schema may only create tables and indexes: a trigger is refused at its line",
          "[grader]") {
  // Wrong 1: a trigger on StockItems that undoes every reservation after the first would
  // change what the built-in table stores. The file is refused where the trigger starts.
  // Mutation caught: the sandbox's schema rule letting a trigger through (the file loads).
  const std::string path = Data("wrong/1-trigger-undoes.toml");
  try {
    files::LoadConsumerFile(path);
    FAIL("the trigger was accepted");
  } catch (const files::FileError& e) {
    const std::string what = e.what();
    CHECK(what.rfind(path + ":6:1: schema: a trigger (KeepFirst on StockItems) is not allowed", 0) ==
          0);
  }
}

TEST_CASE("a redelivery may crash too, at a step of its own", "[grader]") {
  // Counts its attempts and skips from the third on: only a crash on the redelivery as well
  // brings a third attempt. Mutation caught: no follow-up plans (only the first attempt dies).
  files::Grade g = GradeFile(Data("wrong/17-quiet-after-two-tries.toml"), {"crash"});
  const files::GradedCell& crash = CellOf(g, "crash");
  CHECK_FALSE(crash.passed);
  CHECK(EndedIn(crash, "crash at SELECT Attempts, then crash at", Outcome::kLost) > 0);
  // Every failing plan is a second crash's: one crash alone never loses the order.
  for (const explore::VariantResult& v : crash.cell.variants) {
    if (v.variant.find(", then ") == std::string::npos) CHECK(v.counts[Index(Outcome::kLost)] == 0);
  }
  REQUIRE(crash.shown() != nullptr);
  CHECK(crash.shown()->variant ==
        "crash at SELECT Attempts, then crash at SELECT Attempts on the redelivery");
}

TEST_CASE("a correct consumer in each shape of docs/files.md passes every fault", "[grader]") {
  // Mutation caught (any of): a strict plan where a concurrent copy may rightly flag, a
  // stock row read back whole against a consumer's own column, a redelivery that is refused
  // while the lock holder sits parked.
  for (const char* file :
       {"immediate-check-then-insert.toml", "insert-or-ignore.toml", "own-reservations-table.toml",
        "guarded-update.toml", "two-phase-own-table.toml", "provider-key-by-order.toml",
        "cache-prefilter.toml", "dialects-and-labels.toml"}) {
    INFO(file);
    files::Grade g = GradeFile(Data(std::string("right/") + file));
    INFO(files::FormatGrade(g, false));
    CHECK(g.Passed());
  }
}

TEST_CASE("a file whose steps are statements of their own is graded by the order of its writes",
          "[grader]") {
  // Each copy reserves (committed at once) and throws, five attempts each. Its SELECT Inbox
  // touches Inbox, its UPDATE StockItems: the two copies' UPDATEs are the only steps whose
  // order matters, C(10, 5) = 252 orders per plan of two copies (two plans), where a
  // footprint of the whole file made it 34,904 per plan. Mutation caught: StatementFootprint
  // giving every statement the whole file (69,808 schedules).
  files::Grade g = GradeFile(Data("wrong/18-reserve-then-throw.toml"), {"concurrent"});
  const files::GradedCell& cell = CellOf(g, "concurrent");
  CHECK_FALSE(cell.passed);
  CHECK(cell.cell.schedules == 2 * 252);
  CHECK(cell.cell.exhaustive);
}

TEST_CASE("the lock that saves a deferred check on SQLite does not fail it there", "[grader]") {
  // The copy whose write finds the lock taken is refused (SQLITE_BUSY) and redelivered; the
  // redelivery waits for the holder's commit, then finds the record. Mutation caught: the
  // redelivery let run while the holder sits parked (refused five times: error).
  files::Grade g = GradeFile(Data("wrong/8-deferred-check.toml"), {"concurrent"});
  CHECK(g.Passed());
  // Wrong 8: the pass rests on that refusal, which PostgreSQL never makes; the student is
  // told, in the text and the JSON. A right consumer that takes the lock first (BEGIN
  // IMMEDIATE) is refused nothing and gets no note. Mutation caught: the refusals not
  // counted (Refused() leaving stale_refusals alone): no note, a silent pass.
  const files::GradedCell& concurrent = CellOf(g, "concurrent");
  CHECK(concurrent.cell.stale_refused > 0);
  CHECK(concurrent.cell.stale_refused <= concurrent.cell.schedules);
  const std::string text = files::FormatGrade(g, false);
  CHECK(text.find("\nnote: safe on SQLite, perhaps only there. Under concurrent (" +
                  std::to_string(concurrent.cell.stale_refused) + " of " +
                  std::to_string(concurrent.cell.schedules) + " schedules; the first: ") !=
        std::string::npos);
  CHECK(text.find("(SQLITE_BUSY), and the broker redelivered it. PostgreSQL makes no such "
                  "refusal") != std::string::npos);
  nlohmann::ordered_json j = files::GradeToJson(g);
  CHECK(j["cells"][0]["staleRefusals"] == concurrent.cell.stale_refused);
  CHECK(j["note"].get<std::string>().rfind("note: safe on SQLite, perhaps only there.", 0) == 0);
  files::Grade right = GradeFile(Data("right/immediate-check-then-insert.toml"),
                                 {"concurrent", "second-subscriber", "lost-ack"});
  CHECK(right.Passed());
  for (const files::GradedCell& c : right.cells) CHECK(c.cell.stale_refused == 0);
  CHECK(files::StaleRefusalNote(right).empty());
  CHECK(files::GradeToJson(right)["note"].is_null());
}

}  // namespace dedupsim::testing::grader_test

namespace dedupsim::testing::grader_test {

TEST_CASE("a class in one command: every file graded alone, errors as rows, JSON complete",
          "[grader][cli]") {
  // A folder with a right file, a wrong one, a malformed one and two that create the same
  // table: each is graded in its own process and database, the malformed one is a row with
  // its FILE:LINE:COLUMN, and the JSON has one object per file, then the summary. Mutations
  // caught: the files sharing one database (the second CREATE TABLE Processed stops the
  // batch), a file's error ending the batch, the error rows left out of the JSON.
  TempDir dir;
  WriteFile(dir.File("a-right.toml"), ReadFile(Data("right/insert-or-ignore.toml")));
  WriteFile(dir.File("b-wrong.toml"), ReadFile(Data("wrong/10-key-by-book.toml")));
  WriteFile(dir.File("c-bad.toml"),
            "effect = \"stock\"\n[[step]]\nsql = \"UPDATE StockItems SET Reserved = :Qty\"\n");
  const std::string processed =
      "effect = \"stock\"\nschema = \"CREATE TABLE Processed (MessageId TEXT PRIMARY KEY)\"\n"
      "[[step]]\nbegin = \"deferred\"\n[[step]]\nsql = \"INSERT INTO Processed VALUES "
      "(:MessageId)\"\non-duplicate = \"rollback-and-ack\"\n[[step]]\nsql = \"UPDATE StockItems "
      "SET Reserved = Reserved + :Quantity WHERE BookId = :BookId\"\n[[step]]\ncommit = true\n";
  WriteFile(dir.File("d-processed.toml"), processed);
  WriteFile(dir.File("e-processed.toml"), processed);
  WriteFile(dir.File("notes.txt"), "not a consumer file");
  CliResult json = RunCli({"check", dir.path(), "--format", "json", "--jobs", "2"});
  CHECK(json.exit_code == 2);  // a file could not be graded
  std::vector<std::string> lines = SplitLines(json.out);
  REQUIRE(lines.size() == 6);
  std::vector<nlohmann::json> rows;
  for (const std::string& l : lines) rows.push_back(nlohmann::json::parse(l));
  CHECK(rows[0]["file"] == dir.File("a-right.toml"));
  CHECK(rows[0]["verdict"] == "passes");
  CHECK(rows[0]["score"]["points"] == 10);
  CHECK(rows[1]["verdict"] == "FAILS");
  CHECK(rows[1]["score"]["points"] == 7);  // concurrent (2) and orders (1) lost
  CHECK(rows[2]["verdict"] == "error");
  CHECK(rows[2]["error"]["line"] == 3);
  CHECK(rows[2]["error"]["column"] == 41);  // at :Qty
  CHECK(rows[2]["error"]["message"].get<std::string>().rfind("unknown parameter :Qty", 0) == 0);
  CHECK(rows[3]["verdict"] == "passes");
  CHECK(rows[4]["verdict"] == "passes");
  CHECK(rows[5]["summary"]["files"] == 5);
  CHECK(rows[5]["summary"]["passed"] == 3);
  CHECK(rows[5]["summary"]["failed"] == 1);
  CHECK(rows[5]["summary"]["errors"] == 1);
  // The text: each file's report in order, the summary table last.
  CliResult text = RunCli({"check", dir.path(), "--jobs", "2"});
  CHECK(text.exit_code == 2);
  size_t summary = text.out.find("\nsummary\n");
  REQUIRE(summary != std::string::npos);
  CHECK(text.out.find("a-right.toml (a-right): passes, score 10 of 10") < summary);
  CHECK(text.out.find(dir.File("c-bad.toml") + ":3:41: unknown parameter :Qty") < summary);
  CHECK(text.out.find("  " + dir.File("c-bad.toml") + "  ", summary) != std::string::npos);
  CHECK(text.out.find("5 files: 3 pass, 1 fail, 0 not exhaustive, 1 not graded (errors)",
                      summary) != std::string::npos);
  // Without the bad file: 1 (one fails); only right ones: 0.
  CHECK(RunCli({"check", dir.File("a-right.toml"), dir.File("b-wrong.toml")}).exit_code == 1);
  CHECK(RunCli({"check", dir.File("a-right.toml"), dir.File("d-processed.toml")}).exit_code == 0);
  TempDir empty;
  CliResult none = RunCli({"check", empty.path()});
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("no .toml file in this folder") != std::string::npos);
}

TEST_CASE("past its budget a file is sampled, and says it was not exhaustive", "[grader][cli]") {
  // 49 steps a delivery: 2,450 crash plans alone. With a budget of one second the grade is
  // no plain pass: exit 5, the verdict and every cell cut short say so, in JSON too.
  // Mutation caught: the budget ignored (every schedule: exhaustive, exit 0, a long run),
  // or a cut-short cell reported as a pass.
  CliResult r = RunCli({"check", Data("long/forty-nine-steps.toml"), "--budget", "1s", "--format",
                        "json"});
  CHECK(r.exit_code == 5);
  nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["passed"] == false);
  const nlohmann::json& file = j["consumers"][0];
  CHECK(file["verdict"] == "no failure found, not exhaustive");
  CHECK(file["exhaustive"] == false);
  // A cut cell's estimate is never below what it ran; a small cell cut on a loaded machine
  // may have run its few schedules more than once at random (estimated == schedules), and
  // its first walk may have met the scheduler's deadline (sampled 0, seen at load 20), but
  // the crash cells' thousands of plans are beyond what one second runs.
  bool cut = false;
  bool beyond = false;
  bool sampled = false;
  for (const auto& c : file["cells"]) {
    if (c["exhaustive"] == true) continue;
    cut = true;
    if (c["sampled"].get<int64_t>() > 0) sampled = true;
    CHECK(c["estimated"].get<double>() >= c["schedules"].get<double>());
    if (c["estimated"].get<double>() > c["schedules"].get<double>()) beyond = true;
    CHECK(c["sampleSeed"] == 1);
  }
  CHECK(cut);
  CHECK(beyond);
  CHECK(sampled);
  CliResult text = RunCli({"check", Data("long/forty-nine-steps.toml"), "--budget", "1s"});
  CHECK(text.exit_code == 5);
  CHECK(text.out.find("(forty-nine-steps): no failure found, not exhaustive, score 10 of 10\n") !=
        std::string::npos);
  CHECK(text.out.find("at random with seed 1), not exhaustive: the budget ran out") !=
        std::string::npos);
  CHECK(RunCli({"check", Data("long/forty-nine-steps.toml"), "--budget", "0s"}).exit_code == 2);
}

TEST_CASE("a statement that never ends is a row of the batch, at its line", "[grader][cli]") {
  // A recursive CTE with no end: the sandbox stops it past its CPU budget; in a batch the
  // file is a row with its FILE:LINE:COLUMN and the file beside it is still graded.
  // Mutation caught: the batch's child letting the file's error end it (a row saying only
  // "exited with status 2").
  TempDir dir;
  WriteFile(dir.File("a-endless.toml"), ReadFile(Data("long/endless-statement.toml")));
  WriteFile(dir.File("b-right.toml"), ReadFile(Data("right/insert-or-ignore.toml")));
  CliResult r = RunCli({"check", dir.path(), "--format", "json"});
  CHECK(r.exit_code == 2);
  std::vector<std::string> lines = SplitLines(r.out);
  REQUIRE(lines.size() == 3);
  nlohmann::json endless = nlohmann::json::parse(lines[0]);
  CHECK(endless["verdict"] == "error");
  CHECK(endless["error"]["line"] == 7);
  CHECK(endless["error"]["column"] == 8);
  CHECK(endless["error"]["message"].get<std::string>().rfind(
            "this statement ran past its budget of", 0) == 0);
  CHECK(nlohmann::json::parse(lines[1])["verdict"] == "passes");
}

}  // namespace dedupsim::testing::grader_test

namespace dedupsim::testing::grader_test {

TEST_CASE("a class's summary marks a pass that may rest on SQLite's lock", "[grader][cli]") {
  // Wrong 8 beside a right file: its row marks the faults where SQLite refused a stale
  // transaction's write (ok†) and the legend says why; the right file's row has no mark;
  // its JSON row carries the note. Mutation caught: the summary ignoring staleRefusals (a
  // plain ok row for wrong 8, the note seen only in its report above).
  TempDir dir;
  WriteFile(dir.File("a-right.toml"), ReadFile(Data("right/immediate-check-then-insert.toml")));
  WriteFile(dir.File("b-deferred.toml"), ReadFile(Data("wrong/8-deferred-check.toml")));
  CliResult text = RunCli({"check", dir.path(), "--jobs", "2"});
  CHECK(text.exit_code == 0);  // graded safe on SQLite, with the note
  const size_t summary = text.out.find("\nsummary\n");
  REQUIRE(summary != std::string::npos);
  std::vector<std::string> lines = SplitLines(text.out.substr(summary));
  std::string right_row, deferred_row;
  for (const std::string& l : lines) {
    if (l.rfind("  " + dir.File("a-right.toml"), 0) == 0) right_row = l;
    if (l.rfind("  " + dir.File("b-deferred.toml"), 0) == 0) deferred_row = l;
  }
  CHECK(right_row.find("†") == std::string::npos);
  CHECK(deferred_row.find("ok†") != std::string::npos);
  CHECK(text.out.find("  ok†: passes on SQLite, where SQLite refused a write", summary) !=
        std::string::npos);
  CliResult json = RunCli({"check", dir.path(), "--jobs", "2", "--format", "json"});
  std::vector<std::string> rows = SplitLines(json.out);
  REQUIRE(rows.size() == 3);
  CHECK(nlohmann::json::parse(rows[0])["note"].is_null());
  CHECK(nlohmann::json::parse(rows[1])["note"].get<std::string>().rfind(
            "note: safe on SQLite, perhaps only there.", 0) == 0);
}

}  // namespace dedupsim::testing::grader_test

namespace dedupsim::testing::grader_test {

TEST_CASE("an email consumer's counterexample says nothing of reservations", "[grader]") {
  // Its final line counts the emails; "reserved 0 (once per order: 0)" told a student about
  // books no consumer of the run reserves. A stock consumer's final line still has them.
  // Mutation caught: the final line's reservations always told (with_reserved true).
  files::Grade email = GradeFile(std::string(DEDUPSIM_SOURCE_DIR) +
                                     "/examples/consumers/optimistic-email.toml",
                                 {"crash"});
  const std::string text = files::FormatGrade(email, false);
  REQUIRE(text.find("  final: ") != std::string::npos);
  CHECK(text.find("  final: inbox rows ") != std::string::npos);
  CHECK(text.find("emails sent 2") != std::string::npos);
  const size_t final_at = text.find("  final: ");
  CHECK(text.substr(final_at, text.find('\n', final_at) - final_at).find("reserved") ==
        std::string::npos);
  files::Grade stock = GradeFile(Data("wrong/10-key-by-book.toml"), {"orders"});
  CHECK(files::FormatGrade(stock, false).find("  final: reserved ") != std::string::npos);
}

// Mutations: the strategy's `taken` callback left empty (every written reaction listed, the
// inbox's on-duplicate too); no `taken` for an on-duplicate = "throw" (the database's own
// error: the INSERT's throw listed though the duplicate fault took it).
TEST_CASE("the branches no schedule took are listed at their line", "[grader]") {
  TempDir dir;
  const std::string path = dir.path() + "/branches.toml";
  WriteFile(path, R"toml(effect = "stock"

[[step]]
begin = "immediate"

[[step]]
sql = "INSERT INTO Inbox (MessageId, Consumer, ReceivedAt, CompletedAt) VALUES (:MessageId, :Consumer, :Now, :Now)"
on-duplicate = "throw"

[[step]]
sql = "UPDATE StockItems SET Reserved = Reserved + :Quantity WHERE BookId = :BookId"
on-zero-rows = "throw"

[[step]]
commit = true
)toml");
  files::Grade g = GradeFile(path, {"clean", "duplicate"});
  INFO(files::FormatGrade(g, false));
  // The duplicate throws at the INSERT (taken); every book exists, so no UPDATE changes no row.
  REQUIRE(g.untaken == std::vector<std::string>{path + ":12:16 on-zero-rows = \"throw\""});
  const std::string text = files::FormatGrade(g, false);
  CHECK(text.find("never taken in the 4 schedules run") != std::string::npos);
  CHECK(text.find("  " + path + ":12:16 on-zero-rows = \"throw\"\n") != std::string::npos);
  CHECK(files::GradeToJson(g)["untaken"] == nlohmann::json(g.untaken));
  // The example inbox takes its one branch (a duplicate rolls back): nothing listed.
  files::Grade inbox = GradeFile(std::string(DEDUPSIM_SOURCE_DIR) + "/examples/consumers/inbox.toml",
                                 {"clean", "duplicate"});
  CHECK(inbox.untaken.empty());
  CHECK(files::FormatGrade(inbox, false).find("never taken") == std::string::npos);
}

// Mutations: check's page built without ids_as_text (the Inbox row's MessageId shown as m1,
// the book as id-1); ShortIds::Cut naming a UUID by 7 characters (no longer the text's id).
TEST_CASE("the page and the text name a message and a book by one id", "[grader][cli]") {
  TempDir dir;
  const std::string page = dir.File("page.html");
  CliResult run = RunCli({"check", std::string(DEDUPSIM_SOURCE_DIR) + "/examples/consumers/check-then-process.toml",
                          "--fault", "concurrent", "--html", page, "--diagram", "mermaid"});
  REQUIRE(run.exit_code == 1);
  // The text's delivery header names the message; its did line, the book.
  const std::regex header("copy 1 of message ([0-9a-f]{8}), attempt 1");
  const std::regex book(":BookId=([0-9a-f]{8})\u2026");
  std::smatch m;
  REQUIRE(std::regex_search(run.out, m, header));
  const std::string message = m[1];
  REQUIRE(std::regex_search(run.out, m, book));
  const std::string book_id = m[1];
  const std::string html = ReadFile(page);
  // The Inbox row the first copy wrote, and Dune's StockItems row, as the page shows them.
  CHECK(html.find("\"rows\":[[\"" + message + "\u2026\",\"inventory.reserve-stock\"") !=
        std::string::npos);
  CHECK(html.find("\"rows\":[[\"" + book_id + "\u2026\",\"Dune\",\"20\",\"7\"]") != std::string::npos);
  CHECK(html.find("\"m1\"") == std::string::npos);
  CHECK(html.find("\"id-1\"") == std::string::npos);
  // The diagram under the text tells the same message.
  CHECK(run.out.find("deliver message " + message + " (order") != std::string::npos);
}

// Mutations: the books read before the replay instead of after (what the search's last
// schedule left, not the shortest's); a book with no order left out of the lines.
TEST_CASE("the story tells each order's reservation, and the books no order names", "[grader]") {
  // Keyed on the book: the first Dune order reserves, the two after it are skipped as its
  // duplicates; the Solaris order is its book's first.
  files::Grade g = GradeFile(Data("wrong/10-key-by-book.toml"), {"orders"});
  const files::GradedCell& orders = CellOf(g, "orders");
  REQUIRE(orders.replay);
  const explore::Plan& plan = orders.shown()->plan;
  REQUIRE(orders.books.size() == 2);
  const std::vector<std::string> lines = files::FormatBookFigures(orders.books);
  REQUIRE(lines.size() == 2);
  INFO(files::FormatGrade(g, false));
  REQUIRE(plan.orders.size() == 4);
  // Read from the file after the replay: Dune moved by one order of 3, Solaris by its own 3.
  CHECK(orders.books[0].after - orders.books[0].before == 3);
  CHECK(orders.books[1].after - orders.books[1].before == 3);
  CHECK(orders.books[0].after - orders.books[0].before + orders.books[1].after -
            orders.books[1].before ==
        orders.replay->figures.reserved);
  CHECK(lines[0] == "orders " + plan.orders[0].order_id.substr(0, 8) + " (qty 3), " +
                        plan.orders[1].order_id.substr(0, 8) + " (qty 2), " +
                        plan.orders[3].order_id.substr(0, 8) +
                        " (qty 3) (Dune): reserved 3 together, once each is 8: not each once");
  CHECK(lines[1] == "order " + plan.orders[2].order_id.substr(0, 8) +
                        " (Solaris, qty 3): reserved 3 = once");
  // Two copies of one Dune order: the order twice, Solaris (no order) as it was.
  files::Grade copies = GradeFile(std::string(DEDUPSIM_SOURCE_DIR) +
                                      "/examples/consumers/check-then-process.toml",
                                  {"concurrent"});
  const files::GradedCell& c = CellOf(copies, "concurrent");
  const std::string text = files::FormatGrade(copies, false);
  CHECK(text.find("    order " + c.shown()->plan.orders[0].order_id.substr(0, 8) +
                  " (Dune, qty 3): reserved 6 = twice\n    Solaris (no order): untouched, 5 "
                  "reserved\n") != std::string::npos);
  CHECK(files::GradeToJson(copies)["cells"][0]["counterexample"]["books"][1]["reservedAfter"] == 5);
}

// The issue's "verdict twice, story once": the reservation commits once, the publish inside
// the transaction that a crash rolled back went out twice. Mutation: CountPublishes not
// called (the order's line says only "reserved 3 = once").
TEST_CASE("an order's line counts its publishes, which no rollback takes back", "[grader]") {
  TempDir dir;
  const std::string path = dir.File("publish-in-transaction.toml");
  WriteFile(path, R"toml(effect = "stock"

[[step]]
begin = "immediate"

[[step]]
sql = "INSERT INTO Inbox (MessageId, Consumer, ReceivedAt, CompletedAt) VALUES (:MessageId, :Consumer, :Now, :Now)"
on-duplicate = "rollback-and-ack"

[[step]]
sql = "UPDATE StockItems SET Reserved = Reserved + :Quantity WHERE BookId = :BookId"

[[step]]
publish = "StockReserved"

[[step]]
commit = true
)toml");
  files::Grade g = GradeFile(path, {"crash"});
  const files::GradedCell& crash = CellOf(g, "crash");
  REQUIRE(crash.replay);
  CHECK(crash.replay->outcome == Outcome::kTwice);
  const std::vector<std::string> lines = files::FormatBookFigures(crash.books);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == "order " + crash.shown()->plan.orders[0].order_id.substr(0, 8) +
                        " (Dune, qty 3): reserved 3 = once, published twice");
}

}  // namespace dedupsim::testing::grader_test
