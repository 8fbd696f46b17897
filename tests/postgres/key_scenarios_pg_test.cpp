// The key scenarios (record-first, claim-last, natural-key, ...) on PostgreSQL, on the
// fixture's server, each run in its own schema: the lesson's figures hold (--check, with a
// quantity other than the default so they follow the option), the line is SQLite's where
// the lesson is the same, and where PostgreSQL does something else the figures say what
// the server did.
#include <catch2/catch.hpp>
#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pg_support.h"
#include "postgres/connection.h"
#include "postgres/store.h"
#include "sqlite/database.h"
#include "sqlite/store.h"
#include "store/keyed_stores.h"
#include "support.h"

namespace dedupsim::key_scenarios_pg_test {
namespace {

using testing::Conninfo;
using testing::RunCli;
using testing::RunPg;

nlohmann::json Json(const testing::CliResult& r) {
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

bool HasEvent(const nlohmann::json& j, const std::string& detail_prefix,
              const std::string& result) {
  for (const auto& e : j["events"]) {
    if (e["detail"].get<std::string>().rfind(detail_prefix, 0) == 0 && e["result"] == result)
      return true;
  }
  return false;
}

TEST_CASE("the key scenarios on PostgreSQL: --check holds and the line is SQLite's", "[postgres]") {
  const std::vector<std::string> names{"record-first",       "claim-last",       "natural-key",
                                       "correlation-key",    "delivery-tag-key", "random-id",
                                       "content-mismatch",   "shared-key",       "absolute-write",
                                       "duplicate-as-error", "receive-count",    "orphan-claim"};
  // Every run at once, each scenario on SQLite and on PostgreSQL in its own schema: the
  // runs mostly wait out their holds.
  const std::string conninfo = Conninfo();
  std::vector<std::vector<std::string>> commands;
  for (const std::string& name : names) {
    commands.push_back({"run", name, "--format", "json", "--check", "--quantity", "3"});
  }
  for (const std::string& name : names) {
    std::string schema = "t_key_" + name;
    for (char& c : schema) c = c == '-' ? '_' : c;
    commands.push_back({"run", name, "--format", "json", "--check", "--quantity", "3", "--backend",
                        "postgres", "--dsn", conninfo, "--pg-schema", schema});
  }
  std::vector<testing::CliResult> runs = testing::RunCliEach(commands, commands.size());
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    INFO(name);
    nlohmann::json sqlite = Json(runs[i]);
    nlohmann::json pg = Json(runs[names.size() + i]);
    INFO(pg.dump());
    CHECK(pg["check"]["passed"] == true);
    CHECK(pg["reserved"] == sqlite["reserved"]);
    std::string line = sqlite["line"];
    // claim-last's wait is on Dune's row, not the file: the line says so on PostgreSQL.
    if (name == "claim-last") line += "; waited on: row StockItems";
    CHECK(pg["line"] == line);
  }
}

TEST_CASE("claim-last on PostgreSQL: B's stock UPDATE waits on Dune's row, then its claim fails",
          "[postgres]") {
  nlohmann::json j = Json(
      RunPg({"run", "claim-last", "--format", "json", "--hold-ms", "800", "--stagger-ms", "50"},
            "t_claim_last"));
  CHECK(j["processed"] == nlohmann::json({true, false}));
  CHECK(j["reserved"] == 2);
  CHECK(j["secondWaitedAt"] == "stock update");
  CHECK(j["waitedOn"] == "row StockItems");
  CHECK(j["secondStockUpdateChanges"] == 1);  // the server's row count for B's UPDATE
  CHECK(j["secondReservedInside"] == 4);      // A's 2 committed, B's 2 on top
  CHECK(j["secondRolledBack"] == true);
  bool update_seen = false, insert_seen = false;
  for (const auto& s : j["secondStatements"]) {
    const std::string sql = s["sql"];
    if (sql.rfind("UPDATE StockItems", 0) == 0) {
      update_seen = true;
      CHECK(s["waited"] == true);
      CHECK(s["blockedBy"].size() == 1);
      CHECK(s["rows"] == 1);
      CHECK(s["ms"].get<double>() > 0.0);  // until A's commit (the server said it waited)
    }
    if (sql.rfind("INSERT INTO Inbox", 0) == 0) {
      insert_seen = true;
      CHECK(s["waited"] == false);  // A's key is committed by then: no wait, 23505 at once
      CHECK(s["sqlstate"] == "23505");
    }
  }
  CHECK(update_seen);
  CHECK(insert_seen);

  // Released after A committed: nothing waits, the UPDATE still goes through first.
  nlohmann::json late = Json(
      RunPg({"run", "claim-last", "--format", "json", "--hold-ms", "20", "--stagger-ms", "600"},
            "t_claim_last"));
  CHECK(late["secondWaitedAt"] == "nowhere");
  CHECK(late["waitedOn"] == "none");
  CHECK(late["secondStockUpdateChanges"] == 1);
  CHECK(late["processed"] == nlohmann::json({true, false}));
  CHECK(late["line"].get<std::string>().find("second waited at: nowhere") != std::string::npos);

  // REPEATABLE READ: once A commits, B's UPDATE of the row A changed fails with 40001
  // instead of re-reading it; the line says so rather than SQLite's story.
  nlohmann::json rr = Json(RunPg({"run", "claim-last", "--format", "json", "--hold-ms", "800",
                                  "--stagger-ms", "50", "--isolation", "repeatable-read"},
                                 "t_claim_last"));
  CHECK(rr["processed"] == nlohmann::json({true, false}));
  CHECK(rr["reserved"] == 2);
  CHECK(rr["secondWaitedAt"] == "stock update");
  CHECK(rr["secondSqlstate"] == "40001");
  CHECK(rr["secondStockUpdateChanges"] == 0);
  CHECK(rr["secondRolledBack"] == true);
  CHECK(rr["line"].get<std::string>().find(
            "its update failed with 40001 (serialization failure, repeatable-read), then rolled "
            "back") != std::string::npos);
}

TEST_CASE("orphan-claim on PostgreSQL: the SIGKILLed owner's committed claim is taken over",
          "[postgres]") {
  nlohmann::json j = Json(RunPg(
      {"run", "orphan-claim", "--format", "json", "--trace", "--lock-max-age", "5s"}, "t_orphan"));
  CHECK(j["killed"]["redeliveries"] == nlohmann::json({"TakenOver"}));  // 10 s > 5 s lease
  CHECK(j["killed"]["emailsSent"] == 1);
  CHECK(j["killed"]["reserved"] == 2);
  CHECK(j["paused"]["firstOwner"] == "LeaseLost");
  bool died = false, recovered = false;
  for (const auto& e : j["events"]) {
    died |=
        e["kind"] == "died" && e["result"].get<std::string>().find("SIGKILL") != std::string::npos;
    recovered |= e["kind"] == "recover";  // SQLite's recovery from its files: not on a server
  }
  CHECK(died);
  CHECK_FALSE(recovered);
}

TEST_CASE(
    "receive-count and content-mismatch on PostgreSQL: the duplicate's INSERT runs under a "
    "savepoint, so the transaction goes on after 23505",
    "[postgres]") {
  nlohmann::json counted = Json(RunPg(
      {"run", "receive-count", "--format", "json", "--trace", "--deliveries", "3"}, "t_receipts"));
  CHECK(counted["receiveCount"] == 3);
  CHECK(counted["processed"] == nlohmann::json({true, false, false}));
  CHECK(HasEvent(counted, "INSERT INTO Inbox", "sqlstate 23505"));
  CHECK(HasEvent(counted, "ROLLBACK TO SAVEPOINT claim", "ok"));
  CHECK(HasEvent(counted, "UPDATE Inbox SET ReceiveCount", "ok"));

  nlohmann::json hashed =
      Json(RunPg({"run", "content-mismatch", "--format", "json", "--trace"}, "t_hashes"));
  CHECK(hashed["results"] == nlohmann::json({"Processed", "Duplicate", "ContentMismatch"}));
  CHECK(hashed["storedHash"] != hashed["mismatchHash"]);
  CHECK(HasEvent(hashed, "ROLLBACK TO SAVEPOINT claim", "ok"));
}

// The same sequence of lease and reservation calls on both backends, with the same answers:
// one interface, two SQL dialects (SQLite's "IS ?", PostgreSQL's "IS NOT DISTINCT FROM").
TEST_CASE("the keyed stores answer the same on SQLite and PostgreSQL", "[postgres]") {
  DatabaseFile file = DatabaseFile::CreateTemporary(DatabaseSettings{});
  SqliteBackend sqlite(file);
  PgDatabase pg_db = PgDatabase::Open(Conninfo(), "t_keyed_stores");
  PgBackend postgres(pg_db, Isolation::kReadCommitted);
  const Backend* backend = GENERATE_REF(as<const Backend*>{}, &sqlite, &postgres);
  INFO(backend->name());
  backend->ResetInventory(StockItem{"b-1", "Dune", 10, 0});
  std::unique_ptr<Store> store = backend->Open(nullptr, "");
  KeyedStores& keyed = store->keyed();
  const TimePoint t0{};
  const char* consumer = "inventory.reserve-and-notify";

  // A claim with no owner (an in-progress row of another consumer version): taken over
  // only by a compare-and-set that read it ownerless.
  REQUIRE(store->ClaimInProgress(InboxKey::kMessageIdAndConsumer, "m-1", consumer, t0) ==
          InsertResult::kInserted);
  CHECK_FALSE(keyed.TakeOver("m-1", consumer, "B", "2030", std::string("A"), std::nullopt));
  CHECK(keyed.TakeOver("m-1", consumer, "B", "2030", std::nullopt, std::nullopt));
  CHECK_FALSE(keyed.TakeOver("m-1", consumer, "C", "2031", std::nullopt, std::nullopt));
  CHECK(keyed.Renew("m-1", consumer, "B", "2032"));
  CHECK_FALSE(keyed.Renew("m-1", consumer, "A", "2033"));
  std::optional<InboxRow> row = store->Find(InboxKey::kMessageIdAndConsumer, "m-1", consumer);
  REQUIRE(row);
  CHECK(row->owner == std::optional<std::string>("B"));
  CHECK(row->lease_expires_at == std::optional<std::string>("2032"));
  CHECK_FALSE(keyed.CompleteOwned("m-1", consumer, "A", t0));
  CHECK(keyed.CompleteOwned("m-1", consumer, "B", t0));
  CHECK_FALSE(keyed.CompleteOwned("m-1", consumer, "B", t0));  // completed already
  CHECK(keyed.ClaimLeased("m-1", consumer, "D", t0, "2040") == InsertResult::kDuplicateKey);

  // Receipts: the first claims, each later one counts on the row, in one transaction each.
  for (int i = 0; i < 3; ++i) {
    ScopedTransaction tx(*store);
    CHECK(keyed.ClaimOrCountReceipt("m-2", "c", t0) ==
          (i == 0 ? InsertResult::kInserted : InsertResult::kDuplicateKey));
    tx.Commit();
  }
  CHECK(store->Find(InboxKey::kMessageIdAndConsumer, "m-2", "c")->receive_count == 3);

  // Reservations: one per order line; the absolute write replaces, the sum follows.
  CHECK(keyed.InsertReservation("o-1", "b-1", 2, t0) == InsertResult::kInserted);
  keyed.UpsertReservation("o-1", "b-1", 5, t0);
  keyed.UpsertReservation("o-2", "b-1", 1, t0);
  CHECK(keyed.ReservedByRows("b-1") == 6);
  keyed.SetReserved("b-1", 7);
  CHECK(store->ReadStock("b-1").reserved == 7);
}

TEST_CASE("a schema of ours made before the receipt and lease columns gets them on open",
          "[postgres]") {
  PgDatabase::Open(Conninfo(), "t_old_inbox");
  PgConnection raw(Conninfo());
  raw.ExecScript(
      "ALTER TABLE t_old_inbox.Inbox DROP COLUMN ReceiveCount, DROP COLUMN LastReceivedAt, "
      "DROP COLUMN Owner, DROP COLUMN LeaseExpiresAt");
  nlohmann::json j =
      Json(RunPg({"run", "receive-count", "--format", "json", "--check"}, "t_old_inbox"));
  CHECK(j["check"]["passed"] == true);
  CHECK(j["receiveCount"] == 2);
}

}  // namespace
}  // namespace dedupsim::key_scenarios_pg_test

// Issue 28 (walkthrough, 6 December): above READ COMMITTED concurrent-different's second
// order for Dune fails with 40001 and is not redelivered in the run, so "Dune reserved: 2"
// (the first order alone) is neither right nor wrong: uncoloured, where it was green.
// Mutation caught: the figure judged against one order again (concurrent_different.cpp:
// `JudgedReserved(after.title, after.reserved, env.options.quantity)` in the failed case).
TEST_CASE("above read committed the first order alone is not judged right", "[postgres]") {
  dedupsim::testing::CliResult r = dedupsim::testing::RunPg(
      {"run", "concurrent-different", "--color", "always", "--hold-ms", "500", "--stagger-ms",
       "50", "--isolation", "repeatable-read"},
      "t_isolation_colour");
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.find("40001") != std::string::npos);
  const size_t at = r.out.find("Dune reserved: 2");
  REQUIRE(at != std::string::npos);
  REQUIRE(at > 0);
  CHECK(r.out[at - 1] == ' ');  // no colour code opens before it
  CHECK(r.out.substr(at + 16, 1) != "\x1b");
}

// Issue 28: --isolation never turns a lesson into exit 3. Above READ COMMITTED the three
// lessons whose second copy or order updates or claims what the first committed after its
// snapshot show the server's 40001 as the delivery's outcome, and --check expects it there
// (and only there). Mutations caught: the catch of a retryable error in RunInboxPair or in
// duplicate-in-transaction's pair removed (exit 3), claim-last's expectation above READ
// COMMITTED removed (exit 1, "secondStockUpdateChanges is 0, expected 1").
TEST_CASE("above read committed the lessons show 40001 as B's outcome and --check holds",
          "[postgres]") {
  for (const char* isolation : {"repeatable-read", "serializable"}) {
    INFO(isolation);
    dedupsim::testing::CliResult r =
        dedupsim::testing::RunPg({"run", "concurrent-different", "claim-last", "duplicate-in-transaction", "--check",
               "--format", "json", "--hold-ms", "500", "--stagger-ms", "50", "--isolation",
               isolation},
              "t_isolation_check");
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("check failed") == std::string::npos);
    CHECK(r.out.find("\"secondSqlstate\":\"40001\"") != std::string::npos);
    CHECK(r.out.find("\"pairSecondSqlstate\":\"40001\"") != std::string::npos);
    CHECK(r.out.find(std::string("then its update failed with 40001 (serialization failure, ") +
                     isolation + ")") != std::string::npos);
  }
}

namespace dedupsim::key_scenarios_pg_test {
namespace {

// Each delivery's outcome with its verdict ("-": not judged), per sub-run, from --trace.
std::map<std::string, std::vector<std::string>> JudgedOutcomes(const nlohmann::json& j) {
  std::map<std::string, std::vector<std::string>> out = dedupsim::testing::OutcomeVerdicts(j);
  for (auto& [name, outcomes] : out) std::sort(outcomes.begin(), outcomes.end());
  return out;
}

using Outcomes = std::vector<std::string>;

// Issue 28, item 9 on PostgreSQL: above READ COMMITTED B's 40001 is a delivery's outcome,
// judged from what the database held after B's rollback. A refused copy of the message A
// processed is right (Dune reserved once: claim-last, duplicate-in-transaction's pair); a
// second order's 40001 is not judged (the broker redelivers it: isolation-retry's first
// part, whose redelivery is right), and check-then-process's two copies are both wrong.
// Mutation caught: duplicate-in-transaction's pair calling SerializationFailure(store, e)
// without its verdict.
TEST_CASE("above read committed a 40001 outcome is judged from what the database held",
          "[postgres]") {
  testing::CliResult r = testing::RunPg(
      {"run", "claim-last", "duplicate-in-transaction", "isolation-retry", "--format", "json",
       "--trace", "--hold-ms", "300", "--stagger-ms", "50", "--isolation", "serializable"},
      "t_isolation_verdicts");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::vector<std::string> lines = testing::SplitLines(r.out);
  REQUIRE(lines.size() == 3);
  CHECK(JudgedOutcomes(nlohmann::json::parse(lines[0]))[""] ==
        Outcomes{"A Processed right", "B SerializationFailure right"});
  CHECK(JudgedOutcomes(nlohmann::json::parse(lines[1]))
            .at("two copies at once: on conflict do nothing") ==
        Outcomes{"A Processed right", "B SerializationFailure right"});
  const auto retry = JudgedOutcomes(nlohmann::json::parse(lines[2]));
  CHECK(retry.at("two orders at once, no retry loop") ==
        Outcomes{"A Processed right", "B Failed: 40001 -", "B Processed right"});
  CHECK(retry.at("one message twice at once, retry loop: check-then-process") ==
        Outcomes{"A Processed wrong", "B Processed wrong"});
}

}  // namespace
}  // namespace dedupsim::key_scenarios_pg_test
