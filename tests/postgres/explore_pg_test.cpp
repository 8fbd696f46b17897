// explore on PostgreSQL (label `postgres`): the deterministic scheduler on the fixture's
// server. A statement the server shows waiting for a lock is a blocked step, resumed once
// its blocker commits or rolls back; every schedule starts from the same reset; the
// reduction's footprints (a bit per table) give the outcomes brute force gives. Each test
// works in its own schema.
#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "explore/explorer.h"
#include "explore/faults.h"
#include "explore/report.h"
#include "explore/strategies.h"
#include "page_data.h"
#include "pg_support.h"
#include "postgres/store.h"
#include "support.h"

namespace dedupsim::explore::explore_pg_test {
namespace {

using testing::Conninfo;


std::string Cell(Explorer& explorer, const char* strategy, const char* fault) {
  CellResult cell = explorer.ExploreCell(*FindStrategy(strategy), *FindFault(fault));
  return CellLabel(cell) + " (" + std::to_string(cell.schedules) + ")";
}

// What a schedule ended in: the verdict and every figure.
using Final = std::tuple<Outcome, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;

struct Search {
  std::set<Final> finals;
  size_t shortest_failing = 0;  // 0: none
  int64_t schedules = 0;
  bool waited = false;  // some schedule had a step that waited in the server
};

Search Every(Explorer& explorer, const Strategy& strategy, const Fault& fault) {
  Search out;
  for (const Plan& plan : explorer.Plans(strategy, fault)) {
    explorer.ForEachSchedule(plan, [&](const ScheduleResult& run) {
      const Figures& f = run.figures;
      out.finals.insert({run.outcome, f.reserved, f.inbox_rows, f.emails_sent, f.flagged, f.crashes,
                         f.deliveries});
      out.schedules++;
      if (IsFailing(run.outcome) &&
          (out.shortest_failing == 0 || run.picks.size() < out.shortest_failing))
        out.shortest_failing = run.picks.size();
      for (const std::string& step : run.steps) {
        if (step.ends_with(": waits")) out.waited = true;
      }
    });
  }
  return out;
}

TEST_CASE("explore on PostgreSQL: the cells of the four rows under duplicate, crash, concurrent",
          "[postgres]") {
  PgDatabase db = PgDatabase::Open(Conninfo(), "t_explore_cells");
  ExploreOptions options;
  options.postgres = &db;
  Explorer explorer(options);
  // A plain duplicate breaks naive on either backend; the check catches a later duplicate.
  CHECK(Cell(explorer, "naive", "duplicate") == "twice ×1 (1)");
  CHECK(Cell(explorer, "check-then-process", "duplicate") == "once (1)");
  CHECK(Cell(explorer, "inbox", "duplicate") == "once (1)");
  CHECK(Cell(explorer, "claim-last", "duplicate") == "once (1)");
  // A crash between check-then-process's two commits reserves twice; the one-transaction
  // rows lose nothing: the server rolls the dead connection's transaction back.
  CHECK(Cell(explorer, "naive", "crash") == "once (1)");
  CHECK(Cell(explorer, "check-then-process", "crash") == "twice ×2 (4)");
  CHECK(Cell(explorer, "inbox", "crash") == "once (5)");
  CHECK(Cell(explorer, "claim-last", "crash") == "once (6)");
  // Two copies at once: PostgreSQL locks rows, not the file, so check-then-process has
  // fewer distinct schedules than on SQLite (no BUSY steps), and still fails in all but
  // the serial ones; the inbox's second copy waits on the first's key.
  CHECK(Cell(explorer, "naive", "concurrent") == "twice ×2 (2)");
  CHECK(Cell(explorer, "check-then-process", "concurrent") == "twice ×4 (6)");
  CHECK(Cell(explorer, "inbox", "concurrent") == "once (8)");
  CHECK(Cell(explorer, "claim-last", "concurrent") == "once (10)");
}

TEST_CASE("explore on PostgreSQL: the rows added through the store seam, and their cells",
          "[postgres]") {
  PgDatabase db = PgDatabase::Open(Conninfo(), "t_explore_more_rows");
  ExploreOptions options;
  options.postgres = &db;
  Explorer explorer(options);
  // record-first commits the key before the work: a crash between its two commits loses
  // the order on either backend.
  CHECK(Cell(explorer, "record-first", "crash") == "lost ×2 (4)");
  CHECK(Cell(explorer, "record-first", "concurrent") == "once (4)");
  // A key the producer's resend shares (the order's id, the reservation's natural key)
  // catches the resend that a MessageId key lets through.
  CHECK(Cell(explorer, "natural-key", "producer-duplicate") == "once (1)");
  CHECK(Cell(explorer, "correlation-key", "producer-duplicate") == "once (1)");
  CHECK(Cell(explorer, "shared-key", "producer-duplicate") == "twice ×1 (1)");
  CHECK(Cell(explorer, "natural-key", "concurrent") == "once (8)");
  CHECK(Cell(explorer, "correlation-key", "concurrent") == "once (6)");
  // One MessageId-keyed row for two subscribers: whichever claims it first, the other
  // drops its work or finds an email record in progress that is not its own.
  CHECK(Cell(explorer, "shared-key", "second-subscriber") == "lost ×4 reconcile ×8 (12)");
  // The email sent inside the transaction: a second copy sends again before its INSERT
  // meets the first's key.
  CHECK(Cell(explorer, "optimistic-email", "concurrent") == "twice ×12 (14)");
  CHECK(Cell(explorer, "optimistic-email", "crash") == "twice ×4 (7)");
}

TEST_CASE("explore on PostgreSQL: the added rows' reduced search gives brute force's outcomes",
          "[postgres]") {
  PgDatabase db = PgDatabase::Open(Conninfo(), "t_explore_more_reduction");
  ExploreOptions reduced;
  reduced.postgres = &db;
  ExploreOptions brute = reduced;
  brute.reduce = false;
  Explorer fast(reduced);
  Explorer every(brute);
  // optimistic-email is left out: its brute-force search alone takes over a minute.
  for (const char* name : {"record-first", "natural-key", "shared-key", "correlation-key"}) {
    INFO(name << " under concurrent");
    Search a = Every(fast, *FindStrategy(name), *FindFault("concurrent"));
    Search b = Every(every, *FindStrategy(name), *FindFault("concurrent"));
    CHECK(a.finals == b.finals);
    CHECK(a.shortest_failing == b.shortest_failing);
    CHECK(a.schedules <= b.schedules);
  }
}

TEST_CASE(
    "explore on PostgreSQL: a statement that waits in the server is a blocked step, "
    "resumed after its blocker commits",
    "[postgres]") {
  PgDatabase db = PgDatabase::Open(Conninfo(), "t_explore_wait");
  ExploreOptions options;
  options.postgres = &db;
  Explorer explorer(options);
  std::vector<Plan> plans = explorer.Plans(*FindStrategy("inbox"), *FindFault("concurrent"));
  REQUIRE(plans.size() == 1);
  // A: BEGIN, INSERT Inbox; B: BEGIN, INSERT Inbox (waits on A's key); A: UPDATE, hook,
  // COMMIT; B's INSERT has its answer (23505), B rolls back.
  std::optional<ScheduleResult> run = explorer.RunExactly(plans[0], {0, 0, 1, 1, 0, 0, 0, 1, 1});
  REQUIRE(run);
  CHECK(run->steps == std::vector<std::string>{"A  BEGIN", "A  INSERT Inbox", "B  BEGIN",
                                               "B  INSERT Inbox: waits", "A  UPDATE StockItems",
                                               "A  BeforeCommit", "A  COMMIT",
                                               "B  resume INSERT Inbox", "B  ROLLBACK"});
  CHECK(run->outcome == Outcome::kOnce);
  CHECK(run->figures.reserved == run->figures.reserved_expected);
  CHECK(run->figures.inbox_rows == 1);
  // While B waits, only A may move: B is not offered until A's COMMIT released it.
  CHECK(run->eligible[4] == 1u);
  CHECK(run->eligible[5] == 1u);
  CHECK(run->eligible[6] == 1u);
  CHECK(run->eligible[7] == 2u);
}

TEST_CASE(
    "explore on PostgreSQL: the reduction's per-table footprints give brute force's "
    "outcomes",
    "[postgres]") {
  PgDatabase db = PgDatabase::Open(Conninfo(), "t_explore_reduction");
  ExploreOptions reduced;
  reduced.postgres = &db;
  ExploreOptions brute = reduced;
  brute.reduce = false;
  Explorer fast(reduced);
  Explorer every(brute);
  for (const char* name : {"check-then-process", "inbox", "claim-last"}) {
    for (const char* fault : {"concurrent", "crash"}) {
      INFO(name << " under " << fault);
      Search a = Every(fast, *FindStrategy(name), *FindFault(fault));
      Search b = Every(every, *FindStrategy(name), *FindFault(fault));
      CHECK(a.finals == b.finals);
      CHECK(a.shortest_failing == b.shortest_failing);
      CHECK(a.schedules <= b.schedules);
      if (std::string(fault) == "concurrent" && std::string(name) != "check-then-process") {
        CHECK(a.waited);  // the second copy waits on the first's row or key
      }
    }
  }
}

TEST_CASE(
    "explore --backend postgres: the matrix marks the cells that differ from SQLite, and "
    "prints a counterexample",
    "[postgres]") {
  const std::vector<std::string> pg = {"--backend", "postgres",    "--dsn",
                                       Conninfo(),  "--pg-schema", "t_explore_cli"};
  std::vector<std::string> args = {"explore", "--strategy", "optimistic-email", "--fault",
                                   "concurrent"};
  args.insert(args.end(), pg.begin(), pg.end());
  testing::CliResult matrix = testing::RunCli(args);
  REQUIRE(matrix.exit_code == 0);
  CHECK(matrix.out.find("every schedule on a real PostgreSQL server (isolation read-committed, "
                        "seed 1)") != std::string::npos);
  CHECK(matrix.out.find("optimistic-email  twice ×12 (14) *") != std::string::npos);
  CHECK(matrix.out.find("* optimistic-email under concurrent: postgres twice ×12 (14), sqlite "
                        "twice ×8 (10)") != std::string::npos);

  std::vector<std::string> ce = {"explore", "--strategy", "check-then-process",
                                 "--fault", "concurrent", "--counterexample"};
  ce.insert(ce.end(), pg.begin(), pg.end());
  testing::CliResult counter = testing::RunCli(ce);
  REQUIRE(counter.exit_code == 0);
  CHECK(counter.out.find("check-then-process under concurrent: twice ×4 of 6 schedules") !=
        std::string::npos);
  CHECK(counter.out.find("outcome twice") != std::string::npos);
  CHECK(counter.out.find("final: reserved 4 (once per order: 2)") != std::string::npos);

  std::vector<std::string> sqlite_only = {"explore", "--strategy", "email-reconcile"};
  sqlite_only.insert(sqlite_only.end(), pg.begin(), pg.end());
  testing::CliResult refused = testing::RunCli(sqlite_only);
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("not on --backend postgres yet: email-reconcile") != std::string::npos);
}

// The matrix's rows shared out among schemas, each explored by a thread of its own
// (ExploreOptions::postgres_lanes), are the matrix of one schema: the same cells, counts and
// counterexamples in the same order, and one progress that counts each cell and schedule
// once. Fails when a lane's progress is added in whole rather than by what it moved
// (shared.done += p.done), or a row's cells land in another row's place.
// Issue 30: the explorer on PostgreSQL works on the server only (store/explore_database.h):
// it makes no SQLite file, where its scheduler made a temporary one with every row's tables
// and never used it. A counterexample's search is on the schema alone (the matrix compares
// with SQLite's, which needs its file). Mutation caught: OpenExploreDatabase ignoring the
// server (lib/backends/databases.cpp): the scheduler then makes its SQLite file, and fails
// with nowhere to put it.
TEST_CASE("explore on PostgreSQL makes no SQLite file: it runs where a temporary file cannot be made",
          "[postgres]") {
  const std::string nowhere = "TMPDIR=/nonexistent/dedupsim-no-temporary-files";
  const std::vector<std::string> args = {"explore", "--strategy", "inbox", "--fault",
                                         "concurrent", "--counterexample"};
  testing::CliResult sqlite = testing::RunCli(args, {"NO_COLOR=1", nowhere});
  CHECK(sqlite.exit_code == 3);  // SQLite's explorer needs its temporary database there
  std::vector<std::string> on_pg = args;
  on_pg.insert(on_pg.end(),
               {"--backend", "postgres", "--dsn", Conninfo(), "--pg-schema", "t_explore_no_file"});
  testing::CliResult pg = testing::RunCli(on_pg, {"NO_COLOR=1", nowhere});
  INFO(pg.err);
  CHECK(pg.exit_code == 0);
  CHECK(pg.out.find("every one of the 8 schedules ended once") != std::string::npos);
}

TEST_CASE("explore on PostgreSQL: rows explored in parallel schemas give one schema's matrix",
          "[postgres]") {
  const std::vector<const Strategy*> rows = {FindStrategy("naive"), FindStrategy("inbox"),
                                             FindStrategy("check-then-process"),
                                             FindStrategy("claim-last")};
  const std::vector<const Fault*> faults = {FindFault("duplicate"), FindFault("crash"),
                                            FindFault("concurrent")};
  auto without_timing = [](const MatrixResult& m) {
    nlohmann::ordered_json j = MatrixToJson(m);
    j.erase("elapsedMs");
    j.erase("schedulesPerSecond");
    return j.dump();
  };
  PgDatabase one = PgDatabase::Open(Conninfo(), "t_explore_lanes_1");
  ExploreOptions options;
  options.postgres = &one;
  const std::string alone = without_timing(Explorer(options).ExploreMatrix(rows, faults));

  PgDatabase second = PgDatabase::Open(Conninfo(), "t_explore_lanes_2");
  PgDatabase third = PgDatabase::Open(Conninfo(), "t_explore_lanes_3");
  options.postgres_lanes = {&second, &third};
  std::vector<ExploreProgress> seen;
  options.progress = [&seen](const ExploreProgress& p) { seen.push_back(p); };
  Explorer explorer(options);
  const MatrixResult m = explorer.ExploreMatrix(rows, faults);
  CHECK(without_timing(m) == alone);
  REQUIRE(!seen.empty());
  CHECK(seen.back().done == static_cast<int64_t>(rows.size() * faults.size()));
  CHECK(seen.back().total == static_cast<int64_t>(rows.size() * faults.size()));
  CHECK(seen.back().schedules == m.schedules);
}

TEST_CASE("docs/explore.md shows the PostgreSQL matrix exactly as explore prints it",
          "[postgres]") {
  testing::CliResult r = testing::RunCli(
      {"explore", "--backend", "postgres", "--dsn", Conninfo(), "--pg-schema", "t_explore_doc"});
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> lines = testing::SplitLines(r.out);
  REQUIRE(lines.size() > 3);
  // Everything but the last line, which says how fast this run went.
  CHECK(lines.back().rfind("explored in ", 0) == 0);
  std::string printed;
  for (size_t i = 0; i + 1 < lines.size(); ++i) printed += lines[i] + "\n";
  std::string doc = testing::ReadFile(std::string(DEDUPSIM_SOURCE_DIR) + "/docs/explore.md");
  CHECK(testing::DocBlock(doc, "<!-- explore-matrix-postgres -->") == printed);
}

}  // namespace
}  // namespace dedupsim::explore::explore_pg_test

namespace dedupsim::explore::explore_pg_test {

// The step-through page of a counterexample on PostgreSQL: the replayed schedule, and after
// each step the explorer's schema as one snapshot of its committed rows. Failed before:
// refused ("--html reads the tables of the SQLite file after each step", exit 2; and
// Explorer::Replay threw on PostgreSQL). Catches Explorer::Replay reading the scheduler's
// SQLite file on PostgreSQL too (no StockItems row on the page: "" where 4 is expected).
TEST_CASE("explore --backend postgres --counterexample --html: the schema's tables after each step",
          "[postgres][html]") {
  testing::TempDir dir;
  const std::string page = dir.File("ctp.html");
  testing::CliResult r =
      testing::RunCli({"explore", "--strategy", "check-then-process", "--fault", "concurrent",
                       "--counterexample", "--html", page, "--backend", "postgres", "--dsn",
                       Conninfo(), "--pg-schema", "t_explore_html"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("check-then-process under concurrent: twice") != std::string::npos);
  const nlohmann::json data = testing::PageData(testing::ReadFile(page));
  REQUIRE(data["sections"].size() == 1);
  CHECK(data["sections"][0]["scenario"] == "check-then-process under concurrent");
  CHECK(testing::PageLine(data["sections"][0]).find("final: reserved 4") !=
        std::string::npos);
  auto reserved = [&](size_t i) {
    return testing::CellAfter(data, i, "database", "StockItems", "Reserved");
  };
  // Both copies found no Inbox row and reserved: 0, then 2, then the doubled 4, read from
  // the server after each update (each commits alone) and still 4 at the end.
  const std::vector<size_t> updates = testing::StepsWith(data, "UPDATE StockItems");
  REQUIRE(updates.size() == 2);
  CHECK(reserved(updates[0] - 1) == "0");
  CHECK(reserved(updates[0]) == "2");
  CHECK(reserved(updates[1]) == "4");
  CHECK(reserved(data["steps"].size() - 1) == "4");
  CHECK(testing::CellAfter(data, data["steps"].size() - 1, "database", "Inbox", "MessageId") ==
        "m1");
  // Every step has its tables, read (one process: no step without a read).
  for (const auto& s : data["steps"]) {
    REQUIRE(s["snapshot"] >= 0);
    CHECK(data["snapshots"][s["snapshot"].get<size_t>()]["unreadable"] == "");
  }
}

}  // namespace dedupsim::explore::explore_pg_test
