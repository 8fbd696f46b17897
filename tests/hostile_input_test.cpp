// Hostile input (issue 26), end to end through the built binary: a consumer or scenario
// file's SQL stays inside its own database, nothing crashes or hangs, no output overwrites
// an input. Each test is one numbered case of the issue; each checks the exit status, the
// message (FILE:LINE:COLUMN, the rule) and the bytes of what must not change. The test
// environment's $TMPDIR is checked empty after the suite, so a crash's leftovers fail it.
#include <sqlite3.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "exit_status.h"
#include "explore/explorer.h"
#include "explore/faults.h"
#include "explore/strategies.h"
#include "sqlite/error.h"
#include "support.h"

#define ROOT DEDUPSIM_SOURCE_DIR

namespace dedupsim::testing::hostile_input_test {

namespace {

constexpr const char* kReserve =
    "UPDATE StockItems SET Reserved = Reserved + :Quantity WHERE BookId = :BookId";

// A file with one table t of two rows: someone else's database.
std::string Victim(const TempDir& dir) {
  const std::string path = dir.File("victim.db");
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "CREATE TABLE t (a); INSERT INTO t VALUES (1), (2);", nullptr, nullptr,
                       nullptr) == SQLITE_OK);
  sqlite3_close(db);
  return path;
}

bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A scenario file that runs the consumer file named, once, and reads Reserved.
std::string LessonFor(const std::string& consumer) {
  return "line = \"reserved: {reserved}\"\n[[consumer]]\nname = \"c\"\nfile = \"" + consumer +
         "\"\n[[deliver]]\nto = \"c\"\n[[figure]]\nname = \"reserved\"\nsql = \"SELECT Reserved "
         "FROM StockItems WHERE BookId = :BookId\"\n";
}

}  // namespace

TEST_CASE("case 2: a comment before ATTACH or VACUUM INTO gets nothing past the sandbox",
          "[hostile]") {
  // Mutation caught: the statement check reading only the first word (the ATTACH of the
  // schema runs, the DELETE empties the victim; the VACUUM INTO writes the copy).
  TempDir dir;
  const std::string victim = Victim(dir);
  const std::string attach = dir.File("attach.toml");
  WriteFile(attach, "effect = \"stock\"\nschema = \"\"\"\n/*CREATE*/ ATTACH '" + victim +
                        "' AS v;\n/*CREATE*/ DELETE FROM v.t;\"\"\"\n[[step]]\nsql = \"" +
                        kReserve + "\"\n");
  CliResult check = RunCli({"check", attach});
  CHECK(check.exit_code == kExitUsage);
  CHECK(check.err.rfind(attach + ":3:12: schema: ATTACH (another database file) is not allowed: "
                                 "a schema only creates tables",
                        0) == 0);
  const std::string vacuum = dir.File("vacuum.toml");
  WriteFile(vacuum, "effect = \"stock\"\n[[step]]\nsql = \"/*SELECT*/ VACUUM INTO '" +
                        dir.File("copy.db") + "'\"\n");
  CliResult step = RunCli({"check", vacuum});
  CHECK(step.exit_code == kExitUsage);
  CHECK(step.err.rfind(vacuum + ":3:19: a statement that neither reads nor writes rows is not "
                                "allowed: a sql step reads or writes rows",
                       0) == 0);
  // The same files through a lesson: run --file refuses them before anything runs.
  const std::string lesson = dir.File("lesson.toml");
  WriteFile(lesson, LessonFor("attach.toml"));
  CliResult run = RunCli({"run", "--file", lesson});
  CHECK(run.exit_code == kExitUsage);
  CHECK(Contains(run.err, attach + ":3:12: schema: ATTACH"));
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(victim.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* count = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "SELECT count(*) FROM t", -1, &count, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(count) == SQLITE_ROW);
  CHECK(sqlite3_column_int(count, 0) == 2);
  sqlite3_finalize(count);
  sqlite3_close(db);
  CHECK_FALSE(Exists(dir.File("copy.db")));
}

TEST_CASE("case 3: fts3_tokenizer is refused where it is written, never run", "[hostile]") {
  // Mutation caught: fts3_tokenizer on the allow-list (check and run --file then crash with
  // SIGSEGV in Debian's SQLite, or pass).
  TempDir dir;
  const std::string file = dir.File("tokenizer.toml");
  WriteFile(file,
            "effect = \"stock\"\n[[step]]\nsql = \"\"\"\nSELECT 1\n  FROM StockItems\n WHERE "
            "fts3_tokenizer('simple', x'4141414141414141') IS NOT NULL\"\"\"\n");
  CliResult check = RunCli({"check", file});
  CHECK(check.exit_code == kExitUsage);
  CHECK(check.err.rfind(file + ":6:8: function fts3_tokenizer is not allowed", 0) == 0);
  WriteFile(dir.File("lesson.toml"), LessonFor("tokenizer.toml"));
  CliResult run = RunCli({"run", "--file", dir.File("lesson.toml")});
  CHECK(run.exit_code == kExitUsage);
  CHECK(Contains(run.err, file + ":6:8: function fts3_tokenizer is not allowed"));
}

TEST_CASE("case 5: a trigger or a DROP in a schema is refused, a kept --db stays usable",
          "[hostile]") {
  // Mutation caught: triggers or DROP allowed in a schema (every later run of the kept
  // database exits 3 "not as dedupsim made it"), or a schema's own table refused on the
  // second run of a kept database (IF NOT EXISTS, the index it made).
  TempDir dir;
  const std::string trigger = dir.File("trigger.toml");
  WriteFile(trigger,
            "effect = \"stock\"\nschema = \"\"\"\nCREATE TRIGGER undo AFTER UPDATE ON StockItems "
            "BEGIN UPDATE StockItems SET Reserved = 0; END;\"\"\"\n[[step]]\nsql = \"" +
                std::string(kReserve) + "\"\n");
  CliResult t = RunCli({"check", trigger});
  CHECK(t.exit_code == kExitUsage);
  CHECK(t.err.rfind(trigger + ":3:1: schema: a trigger (undo on StockItems) is not allowed: a "
                              "schema only creates tables, and indexes on the tables it creates",
                    0) == 0);
  const std::string drop = dir.File("drop.toml");
  WriteFile(drop, "effect = \"stock\"\nschema = \"CREATE TABLE Mine (a); -- then\\n DROP TABLE "
                  "Inbox\"\n[[step]]\nsql = \"" +
                      std::string(kReserve) + "\"\n");
  CliResult d = RunCli({"check", drop});
  CHECK(d.exit_code == kExitUsage);
  CHECK(d.err.rfind(drop + ":2:44: schema: DROP (removing a table, index, view or trigger) is "
                           "not allowed",
                    0) == 0);
  // A schema of its own tables, run twice on one kept database.
  WriteFile(dir.File("own.toml"),
            "effect = \"stock\"\nschema = \"\"\"\nCREATE TABLE IF NOT EXISTS Seen (Key TEXT "
            "PRIMARY KEY);\nCREATE INDEX IF NOT EXISTS SeenKey ON Seen (Key);\"\"\"\n[[step]]\n"
            "begin = \"immediate\"\n[[step]]\nsql = \"INSERT INTO Seen (Key) VALUES "
            "(:MessageId)\"\non-duplicate = \"rollback-and-ack\"\n[[step]]\nsql = \"" +
                std::string(kReserve) + "\"\n[[step]]\ncommit = true\n");
  WriteFile(dir.File("lesson.toml"), LessonFor("own.toml"));
  const std::string db = dir.File("own.db");
  for (int run = 0; run < 2; ++run) {
    CliResult r = RunCli({"run", "--file", dir.File("lesson.toml"), "--db", db});
    INFO("run " << run << ": " << r.err);
    CHECK(r.exit_code == kExitOk);
    CHECK(r.out == "[lesson]             reserved: 2\n");
  }
}

TEST_CASE("case 6: comments anywhere in a step's SQL, it runs and the check passes", "[hostile]") {
  // Mutation caught: flattening a multi-line statement before SQLite reads it (a -- comment
  // then swallows the rest: "-- SELECT\nSELECT 1" crashed check with SIGSEGV).
  TempDir dir;
  const std::string file = dir.File("commented.toml");
  WriteFile(file,
            "effect = \"stock\"\nconsumer = \"inventory.reserve-stock\"\n[[step]]\nbegin = "
            "\"deferred\"\n[[step]]\nsql = \"\"\"\n-- claim the message first\nINSERT INTO Inbox "
            "(MessageId, Consumer, ReceivedAt, CompletedAt) -- the key\n  VALUES (:MessageId, "
            ":Consumer, /* now */ :Now, :Now); -- done\"\"\"\non-duplicate = "
            "\"rollback-and-ack\"\n[[step]]\nsql = \"\"\"\n/* then reserve */ UPDATE StockItems\n"
            "   SET Reserved = Reserved + :Quantity -- the order's\n WHERE BookId = :BookId\n"
            "\"\"\"\n[[step]]\ncommit = true\n");
  CliResult check = RunCli({"check", file});
  INFO(check.err);
  CHECK(check.exit_code == kExitOk);
  const std::string bare = dir.File("bare.toml");
  WriteFile(bare, "effect = \"stock\"\n[[step]]\nsql = \"\"\"-- SELECT\nSELECT 1\"\"\"\n");
  CliResult select = RunCli({"check", bare});
  CHECK(select.exit_code == kExitCheckFailed);  // it reserves nothing: graded, not crashed
}

TEST_CASE("case 8: PRAGMA writable_schema and a write to sqlite_master are refused, exit 2",
          "[hostile]") {
  // Mutation caught: PRAGMA allowed (then the sqlite_master update aborted the process with
  // an uncaught error and left its temporary files).
  TempDir dir;
  const std::string file = dir.File("pragma.toml");
  WriteFile(file, "effect = \"stock\"\nschema = \"\"\"/*CREATE*/ PRAGMA writable_schema=ON;\n"
                  "/*CREATE*/ UPDATE sqlite_master SET sql = 'x';\"\"\"\n[[step]]\nsql = \"" +
                      std::string(kReserve) + "\"\n");
  CliResult r = RunCli({"check", file});
  CHECK(r.exit_code == kExitUsage);
  CHECK(r.err.rfind(file + ":2:24: schema: PRAGMA writable_schema is not allowed", 0) == 0);
  const std::string update = dir.File("update.toml");
  WriteFile(update, "effect = \"stock\"\n[[step]]\nsql = \"UPDATE sqlite_master SET sql = 'x'\"\n");
  CliResult u = RunCli({"check", update});
  CHECK(u.exit_code == kExitUsage);
  CHECK(u.err.rfind(update + ":3:8: SQL does not prepare: table sqlite_master may not be modified",
                    0) == 0);
}

TEST_CASE("case 9: an endless recursive WITH in a step, a schema or a figure ends at its budget",
          "[hostile]") {
  // Mutation caught: no progress handler (each of the three runs until a signal), or the
  // budget's stop reported as the database's refusal of a delivery (check would go on).
  TempDir dir;
  const std::string endless =
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c";
  WriteFile(dir.File("step.toml"), "effect = \"stock\"\n[[step]]\nsql = \"" + endless + "\"\n");
  WriteFile(dir.File("schema.toml"), "effect = \"stock\"\nschema = \"CREATE TABLE Many AS " +
                                         endless + "\"\n[[step]]\nsql = \"" + kReserve + "\"\n");
  WriteFile(dir.File("figure.toml"),
            "line = \"{n}\"\n[[consumer]]\nbuiltin = \"inbox\"\n[[deliver]]\nto = \"inbox\"\n"
            "[[figure]]\nname = \"n\"\nsql = \"" +
                endless + "\"\n");
  // The test build's budget of 100 ms (1000 ms otherwise), so the three cost little.
  const std::string env = "DEDUPSIM_TEST_ONLY_STATEMENT_BUDGET_MS=100";
  std::vector<CliResult> r = {RunCli({"check", dir.File("step.toml")}, {env}),
                              RunCli({"check", dir.File("schema.toml")}, {env}),
                              RunCli({"run", "--file", dir.File("figure.toml")}, {env})};
  const std::string budget =
      "this statement ran past its budget of 100 ms of CPU time and was stopped";
  CHECK(r[0].exit_code == kExitUsage);
  CHECK(r[0].err == "dedupsim: " + dir.File("step.toml") + ":3:8: " + budget +
                        " (an endless recursive WITH, or far more rows than a lesson needs?)\n");
  CHECK(r[1].exit_code == kExitUsage);
  CHECK(r[1].err.rfind(dir.File("schema.toml") + ":2:11: schema: " + budget, 0) == 0);
  CHECK(r[2].exit_code == kExitUsage);
  CHECK(r[2].err.rfind("dedupsim: " + dir.File("figure.toml") + ":8:8: " + budget, 0) == 0);
}

TEST_CASE("an error in a multi-line statement points at its line and column in the file",
          "[hostile]") {
  // Mutation caught: every SQL error at the start of the string (TextPosition unused), or
  // the position counted in the decoded text (escapes, the dropped first newline).
  TempDir dir;
  const std::string file = dir.File("typo.toml");
  WriteFile(file, "effect = \"stock\"\n[[step]]\nsql = \"\"\"\nUPDATE StockItems\n"
                  "   SET Reserved = Reservd + :Quantity\n WHERE BookId = :BookId\"\"\"\n");
  CliResult r = RunCli({"check", file});
  CHECK(r.exit_code == kExitUsage);
  CHECK(r.err.rfind(file + ":5:19: SQL does not prepare: no such column: Reservd (in: UPDATE "
                           "StockItems SET Reserved = Reservd + :Quantity WHERE BookId = :BookId)",
                    0) == 0);
  // Through escapes: \t is two characters in the file, one in the SQL.
  WriteFile(file, "effect = \"stock\"\n[[step]]\nsql = \"SELECT\\t\\t1 FROM StockItems WHERE "
                  "BookId = :Book\"\n");
  CliResult e = RunCli({"check", file});
  CHECK(e.err.rfind(file + ":3:51: unknown parameter :Book", 0) == 0);
}

TEST_CASE("case 7: TOML nesting is capped for every form, deep keys and headers included",
          "[hostile]") {
  // Mutation caught: no CheckNesting before toml++ (a 100,000-level dotted key or a
  // 50,000-level header overflowed the stack), or a cap that misses one form.
  TempDir dir;
  auto deep = [](const std::string& open, const std::string& sep, const std::string& close,
                 int levels) {
    std::string s = open;
    for (int i = 0; i < levels; ++i) s += (i > 0 ? sep : "") + std::string("k");
    return s + close;
  };
  std::string nested_inline = "x = ";
  for (int i = 0; i < 40; ++i) nested_inline += "{ k = ";
  nested_inline += "1" + std::string(40, '}');
  const std::vector<std::pair<std::string, std::string>> forms = {
      {"dotted.toml", deep("", ".", " = 1\n", 100000)},
      {"header.toml", deep("[", ".", "]\nx = 1\n", 50000)},
      {"tables.toml", deep("[[", ".", "]]\nx = 1\n", 40)},
      {"inline.toml", nested_inline + "\n"},
      {"arrays.toml", "x = " + std::string(40, '[') + std::string(40, ']') + "\n"},
      {"mixed.toml", "[a.b.c.d.e.f.g.h.i.j]\nk.l.m.n.o.p.q.r.s.t = { u.v.w.x.y.z = [[{ a.b.c.d.e.f.g.h.i "
                     "= 1 }]] }\n"},
  };
  for (const auto& [name, text] : forms) {
    WriteFile(dir.File(name), "effect = \"stock\"\n" + text);
    CliResult r = RunCli({"check", dir.File(name)});
    INFO(name << ": " << r.err);
    CHECK(r.exit_code == kExitUsage);
    CHECK(Contains(r.err, dir.File(name) + (name == "mixed.toml" ? ":3:50: " : ":2:")));
    CHECK(Contains(r.err, "nested deeper than 32 levels"));
  }
  // Many dots in values (floats, dates, strings) are no nesting.
  std::string floats = "x = [";
  for (int i = 0; i < 500; ++i) floats += "1.5, ";
  WriteFile(dir.File("floats.toml"), "effect = \"stock\"\nsummary = \"a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p"
                                     ".q.r.s.t.u.v.w.x.y.z.a.b.c.d.e.f.g\"\n" +
                                         floats + "2.5]\n[[step]]\nsql = \"" + kReserve + "\"\n");
  CliResult ok = RunCli({"check", dir.File("floats.toml")});
  CHECK_FALSE(Contains(ok.err, "nested deeper"));
  CHECK(Contains(ok.err, "unknown key 'x'"));  // read whole, then the key is not one of ours
}

TEST_CASE("case 9 and 15: a FIFO, a device, a directory or a huge file is refused unread, exit 2",
          "[hostile]") {
  // Mutation caught: reading FILE without looking at what it is (a FIFO waits for ever,
  // /dev/zero is read until memory runs out, a directory reads as empty: "missing effect").
  TempDir dir;
  const std::string fifo = dir.File("pipe.toml");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::filesystem::create_directory(dir.File("folder.toml"));
  WriteFile(dir.File("huge.toml"), "effect = \"stock\"\n# " + std::string(2 << 20, 'x') + "\n");
  WriteFile(dir.File("lesson.toml"),
            "line = \"{r}\"\n[[consumer]]\nfile = \"/dev/zero\"\n[[deliver]]\nto = \"c\"\n");
  std::vector<CliResult> r = RunCliEach({{"check", fifo},
                                         {"check", "/dev/zero"},
                                         {"check", dir.path()},
                                         {"check", dir.File("huge.toml")},
                                         {"run", "--file", fifo},
                                         {"run", "--file", dir.File("lesson.toml")}});
  CHECK(r[0].err == fifo + ": is a FIFO (a named pipe), not a file to read (expected a .toml file)\n");
  CHECK(r[1].err == "/dev/zero: is a character device, not a file to read (expected a .toml file)\n");
  // `check DIR` grades a class: every *.toml entry is a row, the FIFO and a directory named
  // like a file refused unread among them. Mutation caught: a folder's entries that are not
  // regular files skipped without a word (no row for pipe.toml).
  CHECK(Contains(r[2].out, fifo + ": is a FIFO (a named pipe), not a file to read (expected a "
                                  ".toml file)\n"));
  CHECK(Contains(r[2].out, dir.File("folder.toml") +
                               ": is a directory, not a file to read (expected a .toml file)\n"));
  CHECK(Contains(r[2].out, "4 files: 0 pass, 0 fail, 0 not exhaustive, 4 not graded (errors)"));
  CHECK(r[3].err == dir.File("huge.toml") +
                        ": holds 2097172 bytes; a consumer or scenario file is at most 1048576 "
                        "bytes (1 MB)\n");
  CHECK(r[4].err == "dedupsim: " + fifo + ": is a FIFO (a named pipe), not a file to read "
                                          "(expected a .toml file)\n");
  CHECK(r[5].err == "dedupsim: " + dir.File("lesson.toml") +
                        ":3:8: consumer file /dev/zero: is a character device, not a file to read "
                        "(expected a .toml file)\n");
  for (const CliResult& each : r) CHECK(each.exit_code == kExitUsage);
}

TEST_CASE("case 15: a control character in a file's text or keys is refused where it is written",
          "[hostile]") {
  // Mutation caught: FirstControl not asked (the escape sequence reaches the terminal when
  // dedupsim list or explain prints the summary, or a message echoes the key).
  TempDir dir;
  const std::string file = dir.File("colour.toml");
  WriteFile(file, "effect = \"stock\"\nsummary = \"plain \\u001b[31mred\"\n[[step]]\nsql = \"" +
                      std::string(kReserve) + "\"\n");
  CliResult summary = RunCli({"check", file});
  CHECK(summary.exit_code == kExitUsage);
  CHECK(summary.err == file + ":2:18: summary holds a control character (U+001B); write it "
                              "without one\n");
  WriteFile(file, "effect = \"stock\"\n\"k\\u009b\" = 1\n");
  CliResult key = RunCli({"check", file});
  CHECK(key.exit_code == kExitUsage);
  CHECK(key.err == file + ":2:1: a key holds a control character (U+009B); write it without one\n");
  // Tabs and line breaks are text.
  WriteFile(file, "effect = \"stock\"\nsummary = \"a\\tb\"\n[[step]]\nsql = \"\"\"\nUPDATE "
                  "StockItems\n\tSET Reserved = Reserved + :Quantity\n WHERE BookId = :BookId\"\"\"\n");
  CliResult tabs = RunCli({"check", file});
  INFO(tabs.err);
  CHECK(tabs.exit_code == kExitCheckFailed);  // read and graded (it keeps no key)
}

TEST_CASE("case 1: --html is held to the outputs' rule: never the database or a companion",
          "[hostile]") {
  // Mutation caught: run's --html not in OutputMisfit (the kept database was replaced by a
  // page, or the page written as shop.db-wal for SQLite to delete).
  TempDir dir;
  const std::string db = dir.File("shop.db");
  REQUIRE(RunCli({"run", "naive", "--db", db}).exit_code == kExitOk);
  const std::string before = ReadFile(db);
  ::mkdir(dir.File("sub").c_str(), 0755);
  for (const std::string& target :
       {db, dir.path() + "/sub/../shop.db", db + "-wal", db + "-shm", db + "-journal",
        db + ".cache"}) {
    CliResult r = RunCli({"run", "naive", "--db", db, "--html", target});
    INFO(target);
    CHECK(r.exit_code == kExitUsage);
    CHECK(r.err.rfind("dedupsim: --html " + target + ": that is ", 0) == 0);
    CHECK(Contains(r.err, "database " + db + ", which this run reads or writes; not writing it"));
    CHECK(ReadFile(db) == before);
    CHECK_FALSE(Exists(db + "-wal"));
  }
}

TEST_CASE("case 4: no output over a file the run reads: the lesson, a consumer file it names",
          "[hostile]") {
  // Mutation caught: the outputs' rule given only the database (run --file lesson.svg
  // --timeline lesson.svg replaced the lesson with its own timeline).
  TempDir dir;
  WriteFile(dir.File("own.toml"), "effect = \"stock\"\n[[step]]\nsql = \"" + std::string(kReserve) +
                                      "\"\n");
  const std::string lesson = LessonFor("own.toml");
  WriteFile(dir.File("lesson.svg"), lesson);
  WriteFile(dir.File("lesson.html"), lesson);
  const std::string consumer = ReadFile(dir.File("own.toml"));
  // A consumer file named so the .svg rule passes.
  WriteFile(dir.File("own.svg"), consumer);
  WriteFile(dir.File("names-svg.toml"), LessonFor("own.svg"));
  // A folder of lessons: each of its files is read.
  ::mkdir(dir.File("lessons").c_str(), 0755);
  WriteFile(dir.File("lessons/first.toml"), LessonFor("../own.toml"));
  struct Case {
    std::vector<std::string> args;
    std::string target, role;
  };
  const std::vector<Case> cases = {
      {{"run", "--file", dir.File("lesson.svg"), "--timeline", dir.File("lesson.svg")},
       dir.File("lesson.svg"), "the scenario file " + dir.File("lesson.svg")},
      {{"run", "--file", dir.File("lesson.html"), "--html", dir.File("lesson.html")},
       dir.File("lesson.html"), "the scenario file " + dir.File("lesson.html")},
      {{"run", "--file", dir.File("names-svg.toml"), "--timeline", dir.File("own.svg")},
       dir.File("own.svg"),
       "the consumer file " + dir.File("own.svg") + ", named by " + dir.File("names-svg.toml")},
      {{"run", "--file", dir.File("lessons"), "--html", dir.File("lessons/first.toml")},
       dir.File("lessons/first.toml"), "the scenario file " + dir.File("lessons/first.toml")},
  };
  for (const Case& c : cases) {
    CliResult r = RunCli(c.args);
    INFO(c.target);
    CHECK(r.exit_code == kExitUsage);
    CHECK(Contains(r.err, c.target + ": that is " + c.role + ", which this run reads or writes"));
  }
  CHECK(ReadFile(dir.File("lesson.svg")) == lesson);
  CHECK(ReadFile(dir.File("lesson.html")) == lesson);
  CHECK(ReadFile(dir.File("own.svg")) == consumer);
  CHECK(ReadFile(dir.File("own.toml")) == consumer);
}

TEST_CASE("case 12: empty names, a stray --pg-schema, a hex float, two outputs on one path",
          "[hostile]") {
  // Mutation caught: --html read by add_option (an empty name exits 0), --pg-schema not
  // validated (exit 3 from the server) or not refused on SQLite, --duplicate-rate read by
  // strtod (0x1p-2 taken as 0.25), outputs not compared with each other.
  TempDir dir;
  const std::string page = dir.File("x.svg");
  std::vector<CliResult> r = RunCliEach({
      {"run", "naive", "--html", ""},
      {"run", "naive", "--pg-schema", ""},
      {"run", "naive", "--backend", "postgres", "--pg-schema", std::string(64, 's')},
      {"run", "naive", "--pg-schema", "x"},
      {"explore", "--strategy", "naive", "--pg-schema", "dedupsim"},
      {"cleanup", "--db", dir.File("none.db"), "--older-than", "14d", "--pg-schema", "x"},
      {"bench", "--duplicate-rate", "0x1p-2", "--messages", "10"},
      {"soak", "--duplicate-rate", "nan", "--messages", "10"},
      {"bench", "--duplicate-rate", "1.5", "--messages", "10"},
      {"run", "naive", "--timeline", page, "--html", page},
      {"run", "--dsn", ""},
  });
  CHECK(r[0].err == "dedupsim: --html: empty file name (see dedupsim run --help)\n");
  CHECK(r[1].err == "dedupsim: --pg-schema: an empty schema name (see dedupsim run --help)\n");
  CHECK(Contains(r[2].err, "a schema name is at most 63 bytes"));
  CHECK(r[3].err == "dedupsim: --pg-schema needs --backend postgres\n");
  CHECK(r[4].err == "dedupsim: --dsn, --pg-schema and --isolation need --backend postgres\n");
  CHECK(r[5].err == "dedupsim: --pg-schema needs --backend postgres\n");
  CHECK(Contains(r[6].err, "'0x1p-2' is not a share in [0, 1] written in decimal (like 0.3)"));
  CHECK(Contains(r[7].err, "'nan' is not a share in [0, 1] written in decimal"));
  CHECK(Contains(r[8].err, "'1.5' is more than 1"));
  CHECK(r[9].err == "dedupsim: --timeline " + page + " and --html " + page +
                        " name one file: one output would replace the other\n");
  CHECK(Contains(r[10].err, "an empty connection string"));
  for (const CliResult& each : r) CHECK(each.exit_code == kExitUsage);
  CHECK_FALSE(Exists(page));
}

namespace {

// While alive, files this process (and what it starts) writes may not grow past bytes, and
// a write past it fails with EFBIG instead of killing the writer (SIGXFSZ ignored): the
// error a full disk gives, where the tests can have it.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &before_);
    rlimit limit = before_;
    limit.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limit);
    xfsz_ = ::signal(SIGXFSZ, SIG_IGN);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &before_);
    ::signal(SIGXFSZ, xfsz_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit before_{};
  sighandler_t xfsz_;
};

}  // namespace

TEST_CASE("case 13: a failed write of the machine's stops the explorer with that error",
          "[hostile]") {
  // Mutation caught: the scheduler taking an environment error (a full disk) for the
  // consumer's refusal: redelivered until it is given up, then graded as a verdict, or the
  // exploration stopped with "internal error: strategy naive declares crash points ...".
  explore::Strategy full = *explore::FindStrategy("naive");
  full.name = "full-disk";
  full.handle = [](explore::StoreContext&, const OrderPlaced&) -> explore::DeliveryResult {
    throw SqliteError(13, "/tmp/x.db: database or disk is full (code 13) in: COMMIT");
  };
  const explore::Strategy* extra[] = {&full};
  explore::Explorer explorer(explore::ExploreOptions{}, extra);
  for (const explore::Fault* fault : explore::AllFaults()) {
    INFO(fault->name);
    try {
      explorer.ExploreCell(full, *fault);
      FAIL("the cell was graded");
    } catch (const SqliteError& e) {
      CHECK(e.code() == 13);
      CHECK(std::string(e.what()) == "/tmp/x.db: database or disk is full (code 13) in: COMMIT");
    }
  }
}

TEST_CASE("case 13: a file size limit reached is the machine's error, naming the file, exit 3",
          "[hostile]") {
  // Mutation caught: the explorer taking the failed write for the consumer's refusal (it
  // redelivered, then stopped with "internal error: strategy naive declares crash points
  // ...", or graded the write error as a verdict), soak restarting a consumer that failed
  // so (exit 1, "consumers failed"), or a message without the file or what to do.
  TempDir dir;
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string tmp = tmpdir != nullptr ? tmpdir : "/tmp";
  WriteFile(dir.File("lesson.toml"), LessonFor("own.toml"));
  WriteFile(dir.File("own.toml"), "effect = \"stock\"\n[[step]]\nsql = \"" + std::string(kReserve) +
                                      "\"\n");
  // The limits: past each command's set-up (64 KB: the write fails mid-run, where only the
  // error's own message can name the file), and within run's (16 KB).
  const std::vector<std::pair<rlim_t, std::vector<std::string>>> commands = {
      {64, {"explore"}},
      {64, {"explore", "--strategy", "inbox"}},
      {64, {"check", ROOT "/examples/consumers/inbox.toml"}},
      {64, {"bench", "--messages", "3000"}},
      {64, {"soak", "--messages", "3000"}},
      {16, {"run", "all"}},
      {16, {"run", "--file", dir.File("lesson.toml")}},
  };
  for (const auto& [kb, args] : commands) {
    CliResult r;
    {
      FileSizeLimit limit(kb * 1024);
      r = RunCli(args);
    }
    INFO(args[0] << " " << (args.size() > 1 ? args[1] : "") << ": " << r.err);
    CHECK(r.exit_code == 3);
    CHECK(r.err.rfind("dedupsim: " + tmp + "/dedupsim-", 0) == 0);
    CHECK(Contains(r.err, "disk I/O error"));
    CHECK(Contains(r.err, "(file size limit reached: ulimit -f allows " +
                              std::to_string(kb * 1024) + " bytes; raise it)\n"));
    CHECK_FALSE(Contains(r.err, "internal error"));
  }
}

namespace {

// `args` run with TMPDIR on a tmpfs of `size` (a full disk where the test can have one), in
// a user and mount namespace of its own (unshare -rm): nothing outside sees the mount.
// Returns false when this machine allows no such namespace.
struct FullDiskRun {
  int exit_code = -1;
  std::string err;
  std::string left;  // what the run left on the tmpfs (ls -A)
};
bool RunOnFullTmpfs(const TempDir& dir, const std::string& size,
                    const std::vector<std::string>& args, FullDiskRun& run) {
  if (std::system("unshare -rm true 2>/dev/null") != 0) return false;
  const std::string mount = dir.File("full");
  ::mkdir(mount.c_str(), 0700);
  std::string command = "unshare -rm sh -c 'mount -t tmpfs -o size=" + size + " tmpfs " + mount +
                        " && { TMPDIR=" + mount + " \"$0\" \"$@\" >/dev/null 2>" +
                        dir.File("err") + "; echo $? >" + dir.File("rc") + "; ls -A " + mount +
                        " >" + dir.File("left") + "; }' " + DEDUPSIM_BINARY;
  for (const std::string& a : args) command += " '" + a + "'";
  if (std::system(command.c_str()) != 0) return false;
  run.exit_code = std::stoi(ReadFile(dir.File("rc")));
  run.err = ReadFile(dir.File("err"));
  run.left = ReadFile(dir.File("left"));
  return true;
}

}  // namespace

TEST_CASE("case 13: a full TMPDIR says disk full, naming the file, exit 3, nothing left",
          "[hostile]") {
  // Mutation caught: "disk full" said only for SQLite's code 13 (a full tmpfs fails most
  // writes with code 10, "disk I/O error", and errno lost to SQLite's clean-up), the file
  // not named, a soak consumer's failure restarted, or the explorer's internal error.
  TempDir dir;
  WriteFile(dir.File("lesson.toml"), LessonFor("own.toml"));
  WriteFile(dir.File("own.toml"), "effect = \"stock\"\n[[step]]\nsql = \"" + std::string(kReserve) +
                                      "\"\n");
  const std::vector<std::pair<std::string, std::vector<std::string>>> commands = {
      {"64k", {"explore"}},
      {"256k", {"explore", "--strategy", "naive"}},
      {"64k", {"check", ROOT "/examples/consumers/inbox.toml"}},
      {"1m", {"check", ROOT "/examples/consumers/inbox.toml"}},
      {"1m", {"bench", "--messages", "3000"}},
      {"1m", {"soak", "--messages", "3000"}},
      {"64k", {"run", "--file", dir.File("lesson.toml")}},
  };
  for (const auto& [size, args] : commands) {
    FullDiskRun r;
    if (!RunOnFullTmpfs(dir, size, args, r)) {
      WARN("no user and mount namespace here (unshare -rm): the full tmpfs is not tried");
      return;
    }
    INFO(size << " " << args[0] << " " << (args.size() > 1 ? args[1] : "") << ": " << r.err);
    CHECK(r.exit_code == 3);
    CHECK(Contains(r.err, dir.File("full") + "/dedupsim-"));
    CHECK(Contains(r.err, " (disk full: no room left to write it; free some space, or use a "
                          "folder with room: TMPDIR for temporary files, --db for a kept "
                          "database)\n"));
    CHECK_FALSE(Contains(r.err, "internal error"));
    CHECK(r.left.empty());
  }
}

}  // namespace dedupsim::testing::hostile_input_test

namespace dedupsim::testing::hostile_input_test {

TEST_CASE("a file's SQL never reaches PostgreSQL: run --file on postgres is refused unstarted",
          "[hostile]") {
  // run's sandbox is SQLite's (an authorizer, limits, a budget); on PostgreSQL a file's SQL
  // needs a role limited to its own database and statement_timeout, which only `check`
  // sets up (files/file_database.h): until run uses it too, no lesson file's SQL may run there. Mutation caught: a scenario file
  // given kAnyBackend (lib/files/scenario_file.cpp): the run starts a cluster and runs the
  // file's SQL unsandboxed (exit 0 or 3, not 2).
  TempDir dir;
  WriteFile(dir.File("lesson.toml"), LessonFor(ROOT "/examples/consumers/inbox.toml"));
  CliResult r = RunCli({"run", "--file", dir.File("lesson.toml"), "--backend", "postgres"},
                       {"TMPDIR=" + dir.path()});
  CHECK(r.exit_code == kExitUsage);
  CHECK(r.err == "dedupsim: not on --backend postgres yet: lesson\n");
  // Nothing was started: no cluster folder, no database.
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) left.push_back(e.path());
  CHECK(left == std::vector<std::string>{dir.File("lesson.toml")});
}

}  // namespace dedupsim::testing::hostile_input_test
