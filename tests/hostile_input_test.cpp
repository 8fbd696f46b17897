// Hostile input (issue 26), end to end through the built binary: a consumer or scenario
// file's SQL stays inside its own database, nothing crashes or hangs, no output overwrites
// an input. Each test is one numbered case of the issue; each checks the exit status, the
// message (FILE:LINE:COLUMN, the rule) and the bytes of what must not change. The test
// environment's $TMPDIR is checked empty after the suite, so a crash's leftovers fail it.
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "exit_status.h"
#include "support.h"

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
  CHECK(r[2].err == dir.path() + ": is a directory, not a file to read (expected a .toml file)\n");
  CHECK(r[3].err == dir.File("huge.toml") +
                        ": holds 2097172 bytes; a consumer or scenario file is at most 1048576 "
                        "bytes (1 MB)\n");
  CHECK(r[4].err == "dedupsim: " + fifo + ": is a FIFO (a named pipe), not a file to read "
                                          "(expected a .toml file)\n");
  CHECK(r[5].err == "dedupsim: /dev/zero: is a character device, not a file to read (expected a "
                    ".toml file)\n");
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

}  // namespace dedupsim::testing::hostile_input_test
