// The effects, broker and store lessons on PostgreSQL (issue 12 item 3, label `postgres`):
// each runs on the fixture's server, in its own schema, with --check (its figures are the
// ones its lesson expects for these options), and prints the line it prints on SQLite where
// the lesson is the same there. Where a row-locking server behaves differently, the
// measured PostgreSQL value is asserted.
#include <catch2/catch.hpp>
#include <sys/inotify.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lesson/scenario.h"
#include "page_data.h"
#include "pg_support.h"
#include "scenarios.h"
#include "support.h"

namespace dedupsim::lessons_pg_test {
namespace {

using testing::RunCli;
using testing::RunPg;
using testing::TempDir;

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A schema name of the test's own for a scenario ("t_lesson_second_connection").
std::string SchemaFor(const std::string& name) {
  std::string schema = "t_lesson_" + name;
  for (char& c : schema) {
    if (c == '-') c = '_';
  }
  return schema;
}

TEST_CASE("the effects, broker and store lessons run on PostgreSQL with the figures SQLite has",
          "[postgres]") {
  // Lessons whose line is the same on both backends: nothing in them depends on how the
  // database locks.
  const std::vector<std::string> names{
      "email-reconcile", "optimistic-email",  "unreconcilable", "outbox",
      "retention",       "poison-message",    "broker-dedup",   "cache-arbiter",
      "bounded-store",   "producer-duplicate"};
  // Every run at once, each lesson on SQLite and on PostgreSQL in its own schema: the runs
  // mostly wait out their holds.
  const std::string conninfo = testing::Conninfo();
  std::vector<std::vector<std::string>> commands;
  for (const std::string& name : names) commands.push_back({"run", name, "--check"});
  for (const std::string& name : names) {
    commands.push_back({"run", name, "--check", "--backend", "postgres", "--dsn", conninfo,
                        "--pg-schema", SchemaFor(name)});
  }
  std::vector<testing::CliResult> runs = testing::RunCliEach(commands, commands.size());
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    INFO(name);
    const Scenario* scenario = FindScenario(name);
    REQUIRE(scenario != nullptr);
    CHECK((scenario->traits & kAnyBackend) != 0);
    const testing::CliResult& sqlite = runs[i];
    const testing::CliResult& pg = runs[names.size() + i];
    INFO(pg.err);
    REQUIRE(sqlite.exit_code == 0);
    CHECK(pg.exit_code == 0);  // --check: every expected figure came out
    CHECK(pg.out == sqlite.out);
  }
}

// Mutation caught: `run` making its SQLite file before it looks at --backend (as it did):
// the PostgreSQL run then fails like the SQLite one, with nowhere to put that file.
TEST_CASE("a PostgreSQL run makes no SQLite file: it runs where a temporary file cannot be made",
          "[postgres]") {
  const std::string nowhere = "TMPDIR=/nonexistent/dedupsim-no-temporary-files";
  testing::CliResult sqlite = RunCli({"run", "inbox"}, {"NO_COLOR=1", nowhere});
  CHECK(sqlite.exit_code == 3);  // SQLite's run needs its temporary database there
  CHECK(Has(sqlite.err, "cannot create a temporary database in /nonexistent/"));
  const std::string conninfo = testing::Conninfo();
  REQUIRE_FALSE(conninfo.empty());
  testing::CliResult pg = RunCli({"run", "inbox", "--check", "--backend", "postgres", "--dsn",
                                  conninfo, "--pg-schema", "t_no_sqlite_file"},
                                 {"NO_COLOR=1", nowhere});
  INFO(pg.err);
  CHECK(pg.exit_code == 0);
  CHECK(Has(pg.out, "[inbox]"));
}

// What a command creates directly in the folder `dir` (files and folders, as inotify saw
// them: anything made and removed again during the run too), each as "NAME" or "NAME/".
std::vector<std::string> CreatedDuring(const std::string& dir, const std::function<void()>& run) {
  const int fd = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  REQUIRE(fd >= 0);
  REQUIRE(::inotify_add_watch(fd, dir.c_str(), IN_CREATE) >= 0);
  run();
  std::vector<std::string> created;
  alignas(inotify_event) char buffer[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) break;  // EAGAIN: every event of the run read
    for (ssize_t at = 0; at < n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buffer + at);
      if (e->len > 0) created.push_back(std::string(e->name) + ((e->mask & IN_ISDIR) ? "/" : ""));
      at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
    }
  }
  ::close(fd);
  return created;
}

// Issue 30: a PostgreSQL run creates no SQLite file it does not use. Its side stores (a
// lesson's dedup cache, the email provider's records) are SQLite files it uses: they go in
// a folder of their own, made only by a lesson that keeps one, never beside a SQLite
// database made for nothing. --html reads every store after each step and makes none.
// Mutation caught: SqliteFiles making a temporary SQLite database on a server for the
// side stores to sit beside (as it did): "dedupsim-XXXXXX.db" appears in TMPDIR; or the
// step-through reader making the side stores' folder when it opens (inbox makes one).
TEST_CASE("a PostgreSQL run makes no SQLite database, and a side-store folder only for a lesson that keeps one",
          "[postgres]") {
  const std::string conninfo = testing::Conninfo();
  REQUIRE_FALSE(conninfo.empty());
  testing::TempDir tmp, out;
  const auto run = [&](const std::string& lesson) {
    testing::CliResult r;
    std::vector<std::string> created = CreatedDuring(tmp.path(), [&] {
      r = RunCli({"run", lesson, "--check", "--backend", "postgres", "--dsn", conninfo,
                  "--pg-schema", "t_no_sqlite_db", "--html", out.File(lesson + ".html")},
                 {"NO_COLOR=1", "TMPDIR=" + tmp.path()});
    });
    INFO(lesson << ": " << r.err);
    CHECK(r.exit_code == 0);
    return created;
  };
  // No side store: nothing at all.
  CHECK(run("inbox").empty());
  // A dedup cache, and an email provider's records: one folder of side stores each, no file.
  for (const std::string lesson : {"cache-arbiter", "email-reconcile"}) {
    const std::vector<std::string> created = run(lesson);
    INFO(lesson);
    REQUIRE(created.size() == 1);
    CHECK(created[0].rfind("dedupsim-side-", 0) == 0);
    CHECK(created[0].back() == '/');
    // The page shows the side store's tables beside the server's.
    const std::string page = testing::ReadFile(out.File(lesson + ".html"));
    CHECK(Has(page, lesson == "cache-arbiter" ? "CacheKeys" : "SentEmails"));
  }
  // Everything made was removed at the end.
  CHECK(std::filesystem::is_empty(tmp.path()));
}

TEST_CASE("an option changes the PostgreSQL figures as it changes SQLite's", "[postgres]") {
  // Records kept past the replay: the replay is skipped, Dune reserved once.
  testing::CliResult kept =
      RunPg({"run", "retention", "--retention-days", "30", "--check", "--format", "json"},
            "t_lesson_retention_30");
  INFO(kept.err);
  REQUIRE(kept.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(kept.out);
  CHECK(j["recordsDeleted"] == 0);
  CHECK(j["replayProcessed"] == false);
  CHECK(j["reserved"] == 2);
  // Five deliveries before the dead-letter queue: five failed attempts, nothing kept.
  testing::CliResult poison = RunPg(
      {"run", "poison-message", "--max-deliveries", "5", "--format", "json"}, "t_lesson_poison_5");
  INFO(poison.err);
  REQUIRE(poison.exit_code == 0);
  nlohmann::json p = nlohmann::json::parse(poison.out);
  CHECK(p["handlerAttempts"] == 5);
  CHECK(p["deadLettered"] == 1);
  CHECK(p["inboxRows"] == 0);
  CHECK(p["reserved"] == 0);
}

TEST_CASE(
    "optimistic-email on PostgreSQL: B sends, then its INSERT waits on A's key and fails with "
    "23505",
    "[postgres]") {
  testing::CliResult r = RunPg({"run", "optimistic-email", "--format", "json", "--hold-ms", "800",
                                "--stagger-ms", "50", "--check"},
                               "t_lesson_optimistic_wait");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["optimisticEmails"] == 2);
  CHECK(j["optimisticInboxRows"] == 1);
  CHECK(j["secondWaited"] == true);
  CHECK(j["waitedOn"] == "key Inbox");
  bool insert_seen = false;
  for (const auto& s : j["secondStatements"]) {
    if (!Has(s["sql"].get<std::string>(), "INSERT INTO Inbox")) continue;
    insert_seen = true;
    CHECK(s["waited"] == true);
    CHECK(s["sqlstate"] == "23505");
    CHECK(s["ms"].get<double>() > 0.0);
  }
  CHECK(insert_seen);
}

// PostgreSQL does not say whether an INSERT ... ON CONFLICT ... DO UPDATE inserted or
// updated its row (the command tag is "INSERT 0 1" either way), so absolute-write's upserts
// say no more than "1 row inserted or updated", both of them (issue 28, tenth walkthrough:
// the second read "1 row inserted"); natural-key's plain INSERT, which cannot update, says
// "1 row inserted". Mutation caught: connection.cpp's `e.inserted_or_updated = true` line
// dropped (both upserts "1 row inserted").
// The email provider's records are a SQLite file of their own whatever the backend: on
// PostgreSQL the page says the provider holds its write lock, never "the locks of the rows
// and keys it wrote" (fifteenth walkthrough: the run's backend chose the words, at a BEGIN
// that had written nothing). Mutation caught: html_steps.cpp's StoreBackend returning the
// run's backend for every store.
TEST_CASE("email-reconcile on PostgreSQL: the provider's lock is its SQLite file's", "[postgres]") {
  TempDir dir;
  const std::string page = dir.File("p.html");
  testing::CliResult r = RunPg({"run", "email-reconcile", "--html", page}, "t_lesson_provider_lock");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json data = testing::PageData(testing::ReadFile(page));
  int provider_facts = 0;
  for (const auto& step : data["steps"]) {
    for (const auto& fact : step["facts"]) {
      const std::string f = fact;
      if (f.rfind("Email provider", 0) != 0) continue;
      ++provider_facts;
      INFO(f);
      CHECK(f.find("rows and keys") == std::string::npos);
      if (f.find("holds") != std::string::npos) {
        CHECK(f.find("holds the write lock of the email provider") != std::string::npos);
      }
    }
  }
  CHECK(provider_facts > 0);
}

TEST_CASE("absolute-write on PostgreSQL: the upsert's rows are inserted or updated, not known which",
          "[postgres]") {
  testing::CliResult r = RunPg({"run", "absolute-write", "--format", "json", "--trace", "--check",
                                "--diagram", "mermaid"},
                               "t_lesson_absolute_write");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  int upserts = 0;
  for (const auto& e : j["events"]) {
    if (e["op"] != "INSERT" || e["table"] != "StockReservations") continue;
    ++upserts;
    CHECK(e["rows"] == 1);
    CHECK(e.value("insertedOrUpdated", false));
    CHECK_FALSE(e.contains("updated"));
  }
  CHECK(upserts == 2);
  const std::string diagram = j["diagram"];
  CHECK(Has(diagram, "DB-->>CA: 1 row inserted or updated (autocommit)"));
  CHECK_FALSE(Has(diagram, "DB-->>CA: 1 row inserted (autocommit)"));
  testing::CliResult natural = RunPg({"run", "natural-key", "--format", "json", "--trace"},
                                     "t_lesson_natural_key_words");
  INFO(natural.err);
  REQUIRE(natural.exit_code == 0);
  const nlohmann::json n = nlohmann::json::parse(natural.out);
  int inserts = 0;
  for (const auto& e : n["events"]) {
    if (e["op"] != "INSERT" || e["table"] != "StockReservations" || e["error"] != "") continue;
    ++inserts;
    CHECK_FALSE(e.contains("insertedOrUpdated"));
  }
  CHECK(inserts == 1);
}

TEST_CASE(
    "second-connection on PostgreSQL: the audit insert made while the main transaction is open "
    "does not wait, and the crash still keeps it",
    "[postgres]") {
  testing::CliResult sqlite = RunCli({"run", "second-connection"});
  testing::TempDir out;
  const std::string svg = out.File("second.svg");
  testing::CliResult r = RunPg(
      {"run", "second-connection", "--format", "json", "--check", "--timeline", svg},
      "t_lesson_second");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  // Made on the second connection, committed by itself, while the main transaction was open:
  // never "inside" it (tenth walkthrough: the line said so beside an autocommit bar).
  CHECK(j["auditWritten"] == "while the main transaction was open");
  CHECK(j["auditWaitedOn"] == "none");
  CHECK(j["auditEntriesAfterCrash"] == 1);
  CHECK(j["inboxRowsAfterCrash"] == 0);
  CHECK(j["auditEntries"] == 2);
  // The line is SQLite's, with what the server measured said after it.
  const std::string line = j["line"];
  std::string sqlite_line = sqlite.out.substr(0, sqlite.out.find('\n'));
  CHECK(line.rfind(sqlite_line, 0) == 0);
  CHECK(Has(line,
            "; redelivery's audit insert, made while the main transaction was open, waited on: "
            "none"));
  // The timeline says the audit insert committed by itself, and draws its bar over the
  // transaction it ran beside (sixth walkthrough: the rolled-back transaction's bar was
  // painted over it, and its card line read as part of that transaction). Mutations caught:
  // the autocommit spans drawn in span order (timeline_lane.cpp); lanes.cpp's autocommit
  // flag false.
  const std::string timeline = testing::ReadFile(svg);
  CHECK(Has(timeline, ">INSERT AuditLog: 1 row inserted (autocommit)</text>"));
  const size_t audit_bar = timeline.find("<title>INSERT AuditLog (autocommit)");
  const size_t rolled_back = timeline.find("<rect class=\"bar rollback\"");
  REQUIRE(audit_bar != std::string::npos);
  REQUIRE(rolled_back != std::string::npos);
  CHECK(rolled_back < audit_bar);
  // On SQLite the audit entry comes before the main transaction, and nothing says otherwise.
  testing::CliResult sj = RunCli({"run", "second-connection", "--format", "json"});
  nlohmann::json s = nlohmann::json::parse(sj.out);
  CHECK(s["auditWritten"] == "before the main transaction");
  CHECK_FALSE(s.contains("auditWaitedOn"));
}

// On the server the pair is settled by events (RunStorePairOnServer): with stagger < hold, A
// goes on only once B waits on a lock or has finished. So even a gap of 10 ms, under a CPU
// hog, gives the outcome the options ask for.
TEST_CASE("optimistic-email and cache-arbiter on PostgreSQL follow the options under a CPU hog",
          "[postgres][hog]") {
  testing::CpuHog hog;
  REQUIRE(hog.size() >= 4);
  for (int i = 0; i < 3; ++i) {
    testing::CliResult email = RunPg(
        {"run", "optimistic-email", "--format", "json", "--hold-ms", "100", "--stagger-ms", "90"},
        "t_lesson_hog_email");
    INFO(email.err);
    REQUIRE(email.exit_code == 0);
    nlohmann::json e = nlohmann::json::parse(email.out);
    INFO(e.dump());
    CHECK(e["optimisticOutcomes"] == nlohmann::json({"Sent", "AlreadySent"}));
    CHECK(e["optimisticEmails"] == 2);
    CHECK(e["waitedOn"] == "key Inbox");
    CHECK(e["claimFirstOutcomes"] == nlohmann::json({"Sent", "NeedsReconciliation"}));
    CHECK(e["claimFirstEmails"] == 1);

    testing::CliResult cache = RunPg(
        {"run", "cache-arbiter", "--format", "json", "--hold-ms", "100", "--stagger-ms", "90"},
        "t_lesson_hog_cache");
    INFO(cache.err);
    REQUIRE(cache.exit_code == 0);
    nlohmann::json c = nlohmann::json::parse(cache.out);
    INFO(c.dump());
    CHECK(c["checkThenSetProcessed"] == nlohmann::json({true, true}));
    CHECK(c["setIfAbsentProcessed"] == nlohmann::json({true, false}));
    CHECK(c["setIfAbsentReserved"] == 2);
  }
}

}  // namespace
}  // namespace dedupsim::lessons_pg_test
