// The sandbox for a file's SQL (lib/sqlite/sandbox.h): what a statement is comes from
// SQLite's parse and authorizer, never from its first word; each use allows only what it
// says; the connection is defensive and limited while a scope lives; the budget ends a
// statement by the CPU time it takes, not by the time it waits.
#include <sqlite3.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "sqlite/connection.h"
#include "sqlite/error.h"
#include "sqlite/sandbox.h"
#include "store/sql_text.h"
#include "sqlite/statement.h"
#include "support.h"

namespace dedupsim::testing::sandbox_test {

namespace {

Connection Memory() {
  Connection db("", ConnectionOptions{.create = true, .in_memory = true});
  db.ExecScript(
      "CREATE TABLE StockItems (BookId TEXT PRIMARY KEY, Reserved INTEGER NOT NULL DEFAULT 0);"
      "CREATE TABLE Inbox (MessageId TEXT PRIMARY KEY);"
      "INSERT INTO StockItems (BookId) VALUES ('dune');");
  return db;
}

// The refusal's reason, or "" when the statement was accepted.
std::string Refusal(const std::string& sql, SqlUse use) {
  Connection db = Memory();
  try {
    CheckOneStatement(db, sql, use);
  } catch (const SqlRefused& e) {
    return e.what();
  }
  return "";
}

size_t RefusedAt(const std::string& sql, SqlUse use) {
  Connection db = Memory();
  try {
    CheckOneStatement(db, sql, use);
  } catch (const SqlRefused& e) {
    return e.offset();
  }
  return std::string::npos;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a statement is what SQLite's parse says, whatever its first word or comments",
          "[sandbox]") {
  // Mutation caught: classifying by the first word again (a leading comment would pass
  // ATTACH, and refuse the commented SELECT).
  Connection db = Memory();
  CheckedSql select = CheckOneStatement(db, "-- SELECT\nSELECT 1", SqlUse::kStep);
  CHECK(select.query);
  CHECK(select.read_only);
  CheckedSql update = CheckOneStatement(
      db,
      "/* reserve */ UPDATE StockItems -- the book\n  SET Reserved = Reserved + :Quantity\n"
      "  WHERE BookId = :BookId; -- done",
      SqlUse::kStep);
  CHECK_FALSE(update.query);
  CHECK_FALSE(update.read_only);
  CHECK(update.parameters == std::vector<std::string>{":Quantity", ":BookId"});
  CHECK(update.rules.tables == std::vector<std::string>{"stockitems"});
  CHECK(update.begin == 14);  // the first token, after the comment

  CHECK(Contains(Refusal("/*SELECT*/ ATTACH 'victim.db' AS v", SqlUse::kStep),
                 "ATTACH (another database file) is not allowed"));
  // VACUUM reports no action while it is prepared: refused for being no read or write.
  CHECK(Contains(Refusal("/*SELECT*/ VACUUM INTO '/tmp/copy.db'", SqlUse::kStep),
                 "a statement that neither reads nor writes rows is not allowed"));
  CHECK(Contains(Refusal("/*CREATE*/ SELECT 1", SqlUse::kSchema),
                 "a statement that creates neither a table nor an index is not allowed"));
  CHECK(RefusedAt("/*SELECT*/ ATTACH 'victim.db' AS v", SqlUse::kStep) == 11);
  // One statement per text: a second one after ';' is refused where it starts.
  CHECK(RefusedAt("SELECT 1; SELECT 2", SqlUse::kStep) == 10);
  CHECK(Refusal("SELECT 1;  -- done\n;", SqlUse::kStep).empty());
  CHECK(Contains(Refusal("-- nothing but a comment", SqlUse::kStep), "no statement"));
}

TEST_CASE("each use allows only its own actions, and says which rule a statement broke",
          "[sandbox]") {
  // Mutation caught: allowing an action the use does not name (a trigger in a schema, a
  // write in a figure, a transaction in a step, PRAGMA anywhere).
  CHECK(Contains(Refusal("CREATE TRIGGER t AFTER UPDATE ON StockItems BEGIN UPDATE StockItems SET "
                         "Reserved = 0; END",
                         SqlUse::kSchema),
                 "a trigger (t on StockItems) is not allowed: a schema only creates tables, and "
                 "indexes on the tables it creates"));
  CHECK(Contains(Refusal("CREATE VIEW v AS SELECT 1", SqlUse::kSchema), "a view (v)"));
  CHECK(Contains(Refusal("CREATE VIRTUAL TABLE f USING fts3(a)", SqlUse::kSchema),
                 "a virtual table (f using fts3)"));
  CHECK(Contains(Refusal("CREATE TEMP TABLE x (a)", SqlUse::kSchema),
                 "the temporary schema (TEMP tables, indexes, views, triggers) is not allowed"));
  CHECK(Contains(Refusal("DROP TABLE Inbox", SqlUse::kSchema),
                 "DROP (removing a table, index, view or trigger) is not allowed"));
  CHECK(Contains(Refusal("ALTER TABLE Inbox ADD x", SqlUse::kSchema),
                 "ALTER TABLE Inbox is not allowed"));
  CHECK(Contains(Refusal("DELETE FROM Inbox", SqlUse::kSchema), "DELETE FROM Inbox is not allowed"));
  CHECK(Contains(Refusal("PRAGMA writable_schema=ON", SqlUse::kSchema),
                 "PRAGMA writable_schema is not allowed"));
  // DEFENSIVE refuses a write to the schema table before the authorizer is asked.
  CHECK(Contains(Refusal("UPDATE sqlite_master SET sql = ''", SqlUse::kStep),
                 "table sqlite_master may not be modified"));
  CHECK(Contains(Refusal("SELECT name FROM sqlite_master", SqlUse::kStep),
                 "table sqlite_master (not one of the run's tables) is not allowed"));
  // count(*) reads no column: SQLite names the table as written, without a schema.
  CHECK(Contains(Refusal("SELECT count(*) FROM sqlite_master", SqlUse::kStep),
                 "table sqlite_master (not one of the run's tables)"));
  CHECK(Refusal("SELECT count(*) FROM Inbox", SqlUse::kStep).empty());
  CHECK(Contains(Refusal("SELECT * FROM pragma_table_info('Inbox')", SqlUse::kFigure),
                 "table pragma_table_info (not one of the run's tables)"));
  CHECK(Contains(Refusal("BEGIN", SqlUse::kStep),
                 "BEGIN (a transaction: write begin, commit and rollback steps) is not allowed"));
  CHECK(Contains(Refusal("SAVEPOINT s", SqlUse::kStep), "SAVEPOINT"));
  CHECK(Contains(Refusal("CREATE TABLE t (a)", SqlUse::kStep),
                 "a change to the schema (CREATE, ALTER) is not allowed: a sql step"));
  CHECK(Contains(Refusal("UPDATE StockItems SET Reserved = 1 RETURNING Reserved", SqlUse::kFigure),
                 "UPDATE StockItems is not allowed: a figure only reads rows"));
  CHECK(Contains(Refusal("EXPLAIN SELECT 1", SqlUse::kStep), "EXPLAIN is not allowed"));
  CHECK(Contains(Refusal("ANALYZE", SqlUse::kSchema), "is not allowed"));
  // What each use is for passes.
  CHECK(Refusal("CREATE TABLE IF NOT EXISTS Seen (Key TEXT PRIMARY KEY, At TEXT) WITHOUT ROWID",
                SqlUse::kSchema)
            .empty());
  CHECK(Refusal("INSERT INTO Inbox (MessageId) VALUES (:MessageId) ON CONFLICT DO NOTHING",
                SqlUse::kStep)
            .empty());
  CHECK(Refusal("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 3) "
                "SELECT count(*) FROM c",
                SqlUse::kFigure)
            .empty());
  CHECK(Refusal("SELECT value FROM json_each('[1,2]')", SqlUse::kFigure).empty());
}

TEST_CASE("a schema creates only its own tables, and indexes only those", "[sandbox]") {
  // Mutation caught: an index or a table allowed on a name the run already has (an index on
  // StockItems makes a kept database "not as dedupsim made it").
  Connection db = Memory();
  CHECK(RunSchema(db,
                  "CREATE TABLE Seen (Key TEXT PRIMARY KEY); -- the keys\n"
                  "CREATE INDEX SeenByKey ON Seen (Key);",
                  {}) == std::vector<std::string>{"Seen"});
  auto refused = [&](const std::string& schema) {
    try {
      RunSchema(db, schema, {});
    } catch (const SqlRefused& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(Contains(refused("CREATE INDEX Mine ON StockItems (Reserved)"),
                 "an index on StockItems is not allowed: StockItems is not a table this schema "
                 "creates"));
  CHECK(Contains(refused("CREATE TABLE IF NOT EXISTS Inbox (MessageId TEXT)"),
                 "CREATE TABLE Inbox is not allowed: Inbox is a table of the run"));
  // Its own tables, from an earlier run on a kept database: created again, indexed again.
  CHECK(RunSchema(db, "CREATE TABLE IF NOT EXISTS Seen (Key TEXT PRIMARY KEY);"
                      "CREATE INDEX IF NOT EXISTS SeenByKey ON Seen (Key)",
                  {"Seen"})
            .empty());
  // VACUUM reports nothing until it runs; then its ATTACH is refused, and no copy is made.
  TempDir dir;
  CHECK(Contains(refused("VACUUM INTO '" + dir.File("copy.db") + "'"),
                 "ATTACH (another database file) is not allowed"));
  CHECK(::access(dir.File("copy.db").c_str(), F_OK) != 0);
  // Every statement in turn: the first one is applied, the refused one names its place.
  try {
    RunSchema(db, "CREATE TABLE Fresh (a);\n  /*CREATE*/ ATTACH 'x.db' AS x;", {});
    FAIL("the ATTACH ran");
  } catch (const SqlRefused& e) {
    CHECK(e.offset() == 37);
    CHECK(e.statement() == "ATTACH 'x.db' AS x;");
  }
}

TEST_CASE("functions outside the allow-list are refused, fts3_tokenizer first", "[sandbox]") {
  // Mutation caught: an allow-list that lets any function through (Debian's SQLite has
  // fts3_tokenizer, a memory-corruption primitive, and load_extension).
  CHECK(Contains(Refusal("SELECT fts3_tokenizer('simple', x'4141414141414141')", SqlUse::kStep),
                 "function fts3_tokenizer is not allowed"));
  CHECK(RefusedAt("SELECT 1, fts3_tokenizer('simple')", SqlUse::kStep) == 10);
  CHECK(Contains(Refusal("SELECT load_extension('/tmp/x.so')", SqlUse::kFigure),
                 "function load_extension is not allowed"));
  CHECK(Contains(Refusal("SELECT sqlite_compileoption_get(0)", SqlUse::kFigure),
                 "function sqlite_compileoption_get"));
  CHECK(Contains(Refusal("CREATE TABLE t (a CHECK (fts3_tokenizer('x') IS NULL))", SqlUse::kSchema),
                 "function fts3_tokenizer is not allowed"));
  CHECK(Refusal("SELECT abs(-1), datetime('now'), json_extract('{\"a\":1}', '$.a'), "
                "'{\"a\":1}' ->> '$.a', coalesce(NULL, 1), max(1, 2), sqrt(4)",
                SqlUse::kFigure)
            .empty());
}

TEST_CASE("a scope makes the connection defensive and limited, and leaves its limits as they were",
          "[sandbox]") {
  // Mutation caught: dropping DEFENSIVE, the tokenizer switch, a limit, or their restoring.
  Connection db = Memory();
  sqlite3* h = db.handle();
  const int depth_before = sqlite3_limit(h, SQLITE_LIMIT_EXPR_DEPTH, -1);
  const int compound_before = sqlite3_limit(h, SQLITE_LIMIT_COMPOUND_SELECT, -1);
  SqlRules rules{SqlUse::kStep, {"stockitems"}, {}, kStatementBudget};
  {
    SandboxScope scope(db, rules);
    int defensive = -1, tokenizer = -1;
    sqlite3_db_config(h, SQLITE_DBCONFIG_DEFENSIVE, -1, &defensive);
    sqlite3_db_config(h, SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, -1, &tokenizer);
    CHECK(defensive == 1);
    CHECK(tokenizer == 0);
    CHECK(sqlite3_limit(h, SQLITE_LIMIT_EXPR_DEPTH, -1) == 100);
    CHECK(sqlite3_limit(h, SQLITE_LIMIT_COMPOUND_SELECT, -1) == 10);
    CHECK(sqlite3_limit(h, SQLITE_LIMIT_LENGTH, -1) == 100000);
    CHECK(sqlite3_limit(h, SQLITE_LIMIT_ATTACHED, -1) == 0);
    // A string past the length limit fails when it runs.
    CHECK_THROWS_WITH(db.Prepare("SELECT length(zeroblob(200000))").Step(),
                      Catch::Contains("too big"));
    // A table this statement did not touch when it was checked is refused now.
    CHECK_THROWS_WITH(db.Prepare("SELECT * FROM Inbox"), Catch::Contains("prohibited"));
    CHECK(Contains(scope.refusal(), "table Inbox (not one of the run's tables)"));
  }
  CHECK(sqlite3_limit(h, SQLITE_LIMIT_EXPR_DEPTH, -1) == depth_before);
  CHECK(sqlite3_limit(h, SQLITE_LIMIT_COMPOUND_SELECT, -1) == compound_before);
  CHECK(db.guard() == nullptr);
  db.Prepare("SELECT * FROM Inbox").Step();  // dedupsim's own statements are free again
  // The limits hold when a file's statement is checked too.
  std::string compound = "SELECT 1";
  for (int i = 0; i < 11; ++i) compound += " UNION SELECT 1";
  CHECK(Contains(Refusal(compound, SqlUse::kFigure), "too many terms in compound SELECT"));
  // A VALUES list is not a compound SELECT to the limit.
  std::string values = "INSERT INTO Inbox (MessageId) VALUES ('0')";
  for (int i = 1; i < 30; ++i) values += ", ('" + std::to_string(i) + "')";
  CHECK(Refusal(values, SqlUse::kStep).empty());
  std::string deep = "SELECT 1";
  for (int i = 0; i < 150; ++i) deep += " + 1";
  CHECK(Contains(Refusal(deep, SqlUse::kFigure), "Expression tree is too large"));
}

TEST_CASE("the budget ends a statement by the CPU time it takes, not the time it waits",
          "[sandbox]") {
  // Mutation caught: a wall-clock budget (the waiter below would be cut), or no progress
  // handler (the endless WITH would never end).
  TempDir dir;
  const std::string path = dir.File("budget.db");
  Connection db(path, ConnectionOptions{.create = true});
  db.ExecScript("PRAGMA journal_mode=WAL; CREATE TABLE StockItems (BookId TEXT, Reserved INT);"
                "INSERT INTO StockItems VALUES ('dune', 0);");
  SqlRules rules{SqlUse::kStep, {"stockitems"}, {}, std::chrono::milliseconds(50)};
  {
    SandboxScope scope(db, rules);
    Statement endless =
        db.Prepare("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                   "SELECT count(*) FROM c");
    CHECK_THROWS_WITH(endless.Step(), Catch::Contains("interrupted"));
    CHECK(scope.over_budget());
    CHECK(Contains(scope.BudgetMessage(), "ran past its budget of 50 ms of CPU time"));
  }
  // Writing is bounded too: an endless INSERT stops after 10 MB, well within its CPU time.
  // Mutation caught: the progress handler looking at the CPU time only.
  {
    SqlRules writes{SqlUse::kStep, {"stockitems"}, {}, std::chrono::seconds(30)};
    SandboxScope scope(db, writes);
    Statement endless = db.Prepare(
        "INSERT INTO StockItems WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
        "SELECT 'b' || x, randomblob(50000) FROM c");
    CHECK_THROWS_WITH(endless.Execute(), Catch::Contains("interrupted"));
    CHECK(scope.over_budget());
    CHECK(Contains(scope.BudgetMessage(), "wrote more than its budget of 2560 database pages"));
  }
  // A writer that waits 300 ms for the lock, under a 50 ms budget, is not cut.
  Connection holder(path, ConnectionOptions{});
  holder.Exec("BEGIN IMMEDIATE");
  Connection waiter(path, ConnectionOptions{.busy_timeout = std::chrono::seconds(10)});
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    holder.Exec("COMMIT");
  });
  {
    SandboxScope scope(waiter, rules);
    const auto start = std::chrono::steady_clock::now();
    waiter.Prepare("UPDATE StockItems SET Reserved = Reserved + 2").Execute();
    CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(250));
    CHECK_FALSE(scope.over_budget());
  }
  release.join();
}

TEST_CASE("SQL shown in messages is one line and cut when long", "[sandbox]") {
  // Mutation caught: echoing a 600 KB statement whole, or keeping a comment that swallows
  // the rest of a flattened statement.
  CHECK(SqlOneLine("SELECT a -- the a\n  FROM t /* t */ WHERE b = '--x'") ==
        "SELECT a FROM t WHERE b = '--x'");
  const std::string huge = "SELECT '" + std::string(600000, 'x') + "'";
  const std::string shown = SqlForMessage(huge);
  CHECK(shown.size() < 200);
  CHECK(Contains(shown, "... (600009 bytes)"));
  CHECK(Contains(Refusal(huge, SqlUse::kStep), "too long"));
  CHECK(QuoteSqlIdentifier("a\"; DROP TABLE Inbox; --") == "\"a\"\"; DROP TABLE Inbox; --\"");
  CHECK(FindSqlParameter("WHERE a = :BookId AND b = :Book -- :Book", ":Book") == 26);
}

}  // namespace dedupsim::testing::sandbox_test
