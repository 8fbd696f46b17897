// The views of a run, from hand-made events: statement abbreviations, lanes and
// transactions, the Mermaid diagram, the SVG timeline, color, wrapping, the docs pages'
// generated sections, and the atomic output file.
#include <catch2/catch.hpp>
#include <filesystem>

#include "atomic_file.h"
#include "support.h"
#include "views/color.h"
#include "views/doc_page.h"
#include "views/explain.h"
#include "views/lanes.h"
#include "views/mermaid.h"
#include "views/step_text.h"
#include "views/svg_timeline.h"

using namespace dedupsim;
using dedupsim::testing::ReadFile;
using dedupsim::testing::SplitLines;
using dedupsim::testing::TempDir;

namespace {

TraceEvent Ev(int64_t at_ms, std::string instance, int pid, std::string kind, std::string detail,
              std::string result = "ok", int64_t waited_us = 0, int64_t busy = 0) {
  TraceEvent e;
  e.at_us = at_ms * 1000;
  e.instance = std::move(instance);
  e.pid = pid;
  e.kind = std::move(kind);
  e.detail = std::move(detail);
  e.result = std::move(result);
  e.waited_us = waited_us;
  e.busy_calls = busy;
  return e;
}

const char* kInsert =
    "INSERT INTO Inbox (MessageId, Consumer, ReceivedAt, CompletedAt) VALUES (?1, ?2, ?3, ?4)";
const char* kUpdate = "UPDATE StockItems SET Reserved = Reserved + ?1 WHERE BookId = ?2";

// Two instances as in `concurrent`: A holds its transaction, B waits and is turned away.
std::vector<TraceEvent> ConcurrentEvents() {
  return {
      Ev(1, "A", 10, "open", "new connection"),
      Ev(2, "A", 10, "sql", "BEGIN"),
      Ev(2, "A", 10, "sql", kInsert),
      Ev(3, "A", 10, "sql", kUpdate),
      Ev(3, "A", 10, "hook", "BeforeCommit", ""),
      Ev(100, "B", 10, "sql", "BEGIN"),
      Ev(101, "B", 10, "wait", "write lock held by another connection", "blocked"),
      Ev(503, "A", 10, "sql", "COMMIT"),
      Ev(503, "B", 10, "sql", kInsert, "constraint 1555", 402000, 600),
      Ev(504, "B", 10, "sql", "ROLLBACK"),
  };
}

// A delivery killed in a child process at BeforeCommit, then recovered and redelivered.
std::vector<TraceEvent> KilledEvents() {
  return {
      Ev(1, "A", 21, "open", "new connection"),
      Ev(2, "A", 21, "sql", "BEGIN"),
      Ev(2, "A", 21, "sql", kInsert),
      Ev(3, "A", 21, "hook", "BeforeCommit", ""),
      Ev(3, "A", 21, "crash", "BeforeCommit", "waiting for SIGKILL"),
      Ev(4, "A", 20, "died", "BeforeCommit", "pid 21 killed by SIGKILL"),
      Ev(5, "A", 20, "sql", "SELECT count(*) FROM Inbox", "row"),
      Ev(5, "A", 20, "recover", "hot journal of 4096 bytes left by pid 21: rolled back", "ok"),
      Ev(6, "A", 20, "open", "new connection"),
      Ev(7, "A", 20, "sql", "BEGIN"),
      Ev(8, "A", 20, "sql", "COMMIT"),
  };
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("statements are cut to their verb and table", "[views]") {
  CHECK(AbbreviateSql(kInsert) == "INSERT Inbox");
  CHECK(AbbreviateSql(kUpdate) == "UPDATE StockItems");
  CHECK(AbbreviateSql("SELECT MessageId, Consumer FROM Inbox WHERE MessageId = ?1") ==
        "SELECT Inbox");
  CHECK(AbbreviateSql("SELECT count(*) FROM Inbox") == "SELECT Inbox");
  CHECK(AbbreviateSql("delete from Inbox where 1") == "DELETE Inbox");
  CHECK(AbbreviateSql("BEGIN") == "BEGIN");
  CHECK(AbbreviateSql("BEGIN IMMEDIATE") == "BEGIN IMMEDIATE");
  CHECK(AbbreviateSql("BEGIN TRANSACTION") == "BEGIN");
  CHECK(AbbreviateSql("COMMIT") == "COMMIT");
  CHECK(AbbreviateSql("PRAGMA journal_mode=wal") == "PRAGMA journal_mode=wal");
  CHECK(ClassifySql("ROLLBACK") == SqlControl::kRollback);
  CHECK(ClassifySql("ROLLBACK TO sp") == SqlControl::kNone);
  CHECK(ClassifySql("END") == SqlControl::kCommit);
}

TEST_CASE("results are described with or without timings", "[views]") {
  TraceEvent waited = Ev(1, "B", 1, "sql", kInsert, "constraint 1555", 402400, 600);
  CHECK(DescribeResult(waited, true) == "constraint 1555, waited 402 ms");
  CHECK(DescribeResult(waited, false) == "constraint 1555, waited");
  CHECK(DescribeResult(Ev(1, "A", 1, "sql", "SELECT x FROM Inbox", "ok"), true) == "no row");
  CHECK(DescribeResult(Ev(1, "A", 1, "sql", "SELECT x FROM Inbox", "row"), true) == "row");
  CHECK(ScrubPids("pid 123 killed; left by pid 45") == "pid N killed; left by pid N");
}

TEST_CASE("lanes hold transactions, autocommit statements and lock waits", "[views]") {
  std::vector<Lane> lanes = BuildLanes(ConcurrentEvents());
  REQUIRE(lanes.size() == 2);
  CHECK(lanes[0].instance == "A");
  REQUIRE(lanes[0].spans.size() == 1);
  CHECK(lanes[0].spans[0].kind == Span::Kind::kTransaction);
  CHECK(lanes[0].spans[0].end == Span::End::kCommit);
  CHECK(lanes[0].spans[0].start_us == 2000);
  CHECK(lanes[0].spans[0].end_us == 503000);
  REQUIRE(lanes[1].spans.size() == 1);
  CHECK(lanes[1].spans[0].end == Span::End::kRollback);
  REQUIRE(lanes[1].waits.size() == 1);
  CHECK(lanes[1].waits[0].start_us == 101000);  // from the wait step
  CHECK(lanes[1].waits[0].end_us == 503000);
  CHECK(lanes[1].waits[0].statement == "INSERT Inbox");

  std::vector<Lane> naive =
      BuildLanes({Ev(1, "A", 1, "sql", kUpdate), Ev(2, "A", 1, "sql", kUpdate)});
  REQUIRE(naive.size() == 1);
  REQUIRE(naive[0].spans.size() == 2);
  CHECK(naive[0].spans[0].kind == Span::Kind::kAutocommit);
}

TEST_CASE("a transaction left open by a killed child ends where its death was seen", "[views]") {
  std::vector<Lane> lanes = BuildLanes(KilledEvents());
  REQUIRE(lanes.size() == 2);
  CHECK(lanes[0].pid == 21);
  REQUIRE(lanes[0].spans.size() == 1);
  CHECK(lanes[0].spans[0].end == Span::End::kDied);
  CHECK(lanes[0].spans[0].end_us == 4000);
  CHECK(lanes[0].spans[0].end_detail == "pid 21 killed by SIGKILL");
  CHECK(lanes[0].spans[0].crashed);
}

TEST_CASE("deliveries start at each open step, or at an instance's first step", "[views]") {
  std::vector<TraceEvent> events = ConcurrentEvents();
  std::vector<int> starts = DeliveryStarts(events);
  CHECK(starts[0] == 1);  // A's open
  CHECK(starts[1] == 0);
  CHECK(starts[5] == 2);  // B opened no connection of its own: its first step
  std::vector<int> killed = DeliveryStarts(KilledEvents());
  CHECK(killed[0] == 1);
  CHECK(killed[5] == 0);  // the parent's steps after the death are not a delivery
  CHECK(killed[8] == 2);
}

TEST_CASE("a waiting statement stamped just before the other's COMMIT is shown after it",
          "[views]") {
  std::vector<TraceEvent> events = {
      Ev(1, "A", 1, "sql", "BEGIN"),
      Ev(2, "B", 1, "sql", kInsert, "constraint 1555", 400000, 500),
      Ev(3, "A", 1, "sql", "COMMIT"),
      Ev(4, "B", 1, "sql", "ROLLBACK"),
  };
  std::vector<TraceEvent> ordered = CausalOrder(events);
  CHECK(ordered[1].detail == "COMMIT");
  CHECK(ordered[2].instance == "B");
  CHECK(ordered[2].busy_calls == 500);
  // Far apart: left alone.
  events[2].at_us = 50000;
  CHECK(CausalOrder(events)[1].instance == "B");
}

TEST_CASE("the Mermaid diagram follows the events", "[views][mermaid]") {
  std::string d = MermaidDiagram(ConcurrentEvents(), {});
  CHECK(d.rfind("sequenceDiagram\n", 0) == 0);
  CHECK(d.find("participant Broker\n") != std::string::npos);
  CHECK(d.find("participant ConsumerA as Consumer A\n") != std::string::npos);
  CHECK(d.find("participant ConsumerB as Consumer B\n") != std::string::npos);
  CHECK(d.find("participant DB as Database\n") != std::string::npos);
  CHECK(d.find("Email") == std::string::npos);
  CHECK(d.find("autocommit") == std::string::npos);  // every write was in a transaction
  CHECK(d.find("Broker->>ConsumerA: delivery 1\n") != std::string::npos);
  CHECK(d.find("Broker->>ConsumerB: delivery 2\n") != std::string::npos);
  CHECK(d.find("ConsumerA->>DB: INSERT Inbox\n") != std::string::npos);
  CHECK(d.find("ConsumerA->>DB: UPDATE StockItems\n") != std::string::npos);
  CHECK(d.find("Note over ConsumerA: hook BeforeCommit, next step done 500 ms later\n") !=
        std::string::npos);
  CHECK(d.find("Note over ConsumerB,DB: waits: write lock held by another connection\n") !=
        std::string::npos);
  CHECK(d.find("DB-->>ConsumerB: constraint 1555, waited 402 ms\n") != std::string::npos);
  // B's request is drawn where its wait began, its answer after A's COMMIT.
  CHECK(d.find("ConsumerB->>DB: INSERT Inbox") < d.find("ConsumerA->>DB: COMMIT"));
  CHECK(d.find("ConsumerA->>DB: COMMIT") < d.find("DB-->>ConsumerB: constraint 1555"));
  CHECK(Count(d, "\n    activate ") == Count(d, "\n    deactivate "));

  MermaidOptions stable;
  stable.timings = false;
  std::string s = MermaidDiagram(ConcurrentEvents(), stable);
  CHECK(s.find("DB-->>ConsumerB: constraint 1555, waited\n") != std::string::npos);
  CHECK(s.find(" ms") == std::string::npos);
}

TEST_CASE("the Mermaid diagram shows a killed process, its pid and the recovery",
          "[views][mermaid]") {
  std::string d = MermaidDiagram(KilledEvents(), {});
  CHECK(d.find("Broker->>ConsumerA: delivery 1 (pid 21)\n") != std::string::npos);
  CHECK(d.find("Note over ConsumerA: crash at BeforeCommit: waiting for SIGKILL (pid 21)\n") !=
        std::string::npos);
  CHECK(d.find("Note over ConsumerA: died at BeforeCommit: pid 21 killed by SIGKILL\n") !=
        std::string::npos);
  CHECK(d.find("Note over ConsumerA,DB: recovery: hot journal") != std::string::npos);
  CHECK(d.find("Broker->>ConsumerA: delivery 2 (pid 20)\n") != std::string::npos);
  // The killed transaction's activation ends with the process.
  CHECK(Count(d, "\n    activate ") == Count(d, "\n    deactivate "));

  MermaidOptions stable;
  stable.timings = false;
  std::string s = MermaidDiagram(KilledEvents(), stable);
  CHECK(s.find("pid 2") == std::string::npos);
  CHECK(s.find("died at BeforeCommit: pid N killed by SIGKILL") != std::string::npos);
}

TEST_CASE("the Mermaid diagram has the Email provider only when an email was sent",
          "[views][mermaid]") {
  std::vector<TraceEvent> events = {
      Ev(1, "A", 1, "sql", "SELECT MessageId FROM Inbox WHERE MessageId = ?1"),
      Ev(2, "A", 1, "sql", kInsert),
      Ev(2, "A", 1, "send", "EmailProvider.Send", "sent"),
      Ev(3, "A", 1, "hook", "AfterSend", ""),
      Ev(3, "A", 1, "crash", "AfterSend", "crash"),
  };
  std::string d = MermaidDiagram(events, {.timings = true, .title = "dedupsim run email; #1"});
  CHECK(d.rfind("%% dedupsim run email, 1\nsequenceDiagram\n", 0) == 0);
  CHECK(d.find("participant Email as Email provider\n") != std::string::npos);
  CHECK(d.find("ConsumerA->>Email: EmailProvider.Send\n") != std::string::npos);
  CHECK(d.find("Email-->>ConsumerA: sent\n") != std::string::npos);
  CHECK(d.find("DB-->>ConsumerA: no row\n") != std::string::npos);
  CHECK(d.find("DB-->>ConsumerA: ok (autocommit)\n") != std::string::npos);
  CHECK(d.find("Note over ConsumerA: crash at AfterSend\n") != std::string::npos);
}

TEST_CASE("the SVG timeline draws lanes, bars, waits and labels", "[views][svg]") {
  std::string svg = SvgTimeline({{"concurrent", "[inbox] a & b <c>", ConcurrentEvents()},
                                 {"killed", "[inbox] killed", KilledEvents()},
                                 {"empty", "[x] nothing", {}}});
  CHECK(svg.rfind(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"",
            0) == 0);
  CHECK(svg.find("</svg>\n") == svg.size() - 7);
  CHECK(svg.find(">concurrent</text>") != std::string::npos);
  CHECK(svg.find("[inbox] a &amp; b &lt;c&gt;") != std::string::npos);
  CHECK(svg.find(">Consumer A</text>") != std::string::npos);
  CHECK(svg.find(">Consumer B</text>") != std::string::npos);
  CHECK(svg.find("class=\"bar commit\"") != std::string::npos);
  CHECK(svg.find("class=\"bar rollback\"") != std::string::npos);
  CHECK(svg.find("class=\"bar died\"") != std::string::npos);
  CHECK(svg.find(">COMMIT</text>") != std::string::npos);
  CHECK(svg.find(">ROLLBACK</text>") != std::string::npos);
  CHECK(svg.find("<title>lock wait</title>") != std::string::npos);
  CHECK(svg.find("INSERT Inbox waits for the write lock: 402.0 ms") != std::string::npos);
  CHECK(svg.find("crash at BeforeCommit (waiting for SIGKILL)") != std::string::npos);
  CHECK(svg.find(">pid 21</text>") != std::string::npos);
  CHECK(svg.find(">0 ms</text>") != std::string::npos);  // the axis
  CHECK(svg.find(">-0 ms</text>") == std::string::npos);
  CHECK(svg.find("no steps were recorded") != std::string::npos);
  CHECK(svg.find("<script") == std::string::npos);
  CHECK(svg.find("href") == std::string::npos);  // nothing to fetch
}

TEST_CASE("color follows --color, the terminal, NO_COLOR and TERM", "[views][color]") {
  CHECK(ShouldColor(ColorChoice::kAlways, false, "1", "dumb"));
  CHECK_FALSE(ShouldColor(ColorChoice::kNever, true, nullptr, "xterm"));
  CHECK(ShouldColor(ColorChoice::kAuto, true, nullptr, "xterm"));
  CHECK(ShouldColor(ColorChoice::kAuto, true, "", "xterm"));  // set but empty: no effect
  CHECK_FALSE(ShouldColor(ColorChoice::kAuto, true, "1", "xterm"));
  CHECK_FALSE(ShouldColor(ColorChoice::kAuto, false, nullptr, "xterm"));
  CHECK_FALSE(ShouldColor(ColorChoice::kAuto, true, nullptr, "dumb"));
  CHECK(ParseColorChoice("always") == ColorChoice::kAlways);
  CHECK_FALSE(ParseColorChoice("sometimes").has_value());
}

TEST_CASE("a colored line strips back to the plain line", "[views][color]") {
  for (const std::string& line : dedupsim::testing::PostLines()) {
    std::string green = ColorizeLine(line, true);
    CHECK(green != line);
    CHECK(StripColor(green) == line);
    CHECK(StripColor(ColorizeLine(line, false)) == line);
  }
  std::string line =
      "[email]              crash after send, redelivered -> emails sent: 1, second delivery: "
      "NeedsReconciliation";
  CHECK(ColorizeLine(line, true) ==
        "\x1b[1;36m[email]\x1b[0m              crash after send, redelivered -> emails sent: "
        "\x1b[1;32m1\x1b[0m, "
        "second delivery: \x1b[1;32mNeedsReconciliation\x1b[0m");
  std::string wrong = ColorizeLine(
      "[inbox]              delivered twice -> processed: True, False; Dune reserved: 4", false);
  CHECK(wrong.find("\x1b[1;31mTrue\x1b[0m, \x1b[1;31mFalse\x1b[0m") != std::string::npos);
  CHECK(wrong.find("reserved: \x1b[1;31m4\x1b[0m") != std::string::npos);
  CHECK(wrong.find("Dune") != std::string::npos);
  CHECK(wrong.find("\x1b[1;31mDune") == std::string::npos);
}

TEST_CASE("text is wrapped to the width, commands kept whole", "[views][explain]") {
  std::string text =
      "one two three four five six seven eight nine ten eleven twelve\n\nsecond paragraph here\n"
      "Try this:\n  dedupsim run concurrent --hold-ms 0 --trace --and-a-very-long-option-list";
  std::string wrapped = WrapText(text, 24, "  ");
  for (const std::string& line : SplitLines(wrapped)) {
    if (line.rfind("    ", 0) == 0) continue;  // the command
    CHECK(line.size() <= 24);
  }
  CHECK(wrapped.find(
            "    dedupsim run concurrent --hold-ms 0 --trace --and-a-very-long-option-list\n") !=
        std::string::npos);
  CHECK(wrapped.find("\n\n") != std::string::npos);  // paragraphs stay apart
  CHECK(wrapped.rfind("  one two three four", 0) == 0);
}

TEST_CASE("generated sections are replaced between their markers", "[views][docs]") {
  std::vector<GeneratedSection> sections{
      {"Output", "output", FencedBlock("text", "new line")},
      {"Diagram", "diagram", FencedBlock("mermaid", "sequenceDiagram\n")}};
  std::string page = "# x\n\nProse.\n\n## Output\n\n" + BeginMarker("output") +
                     "\n```text\nold\n```\n" + EndMarker("output") + "\n\nMore prose.\n";
  std::string out = RewritePage(page, sections);
  CHECK(out == "# x\n\nProse.\n\n## Output\n\n" + BeginMarker("output") +
                   "\n```text\nnew line\n```\n" + EndMarker("output") + "\n\nMore prose.\n");
  CHECK(RewritePage(out, sections) == out);  // no Diagram heading: none added
}

TEST_CASE("a heading without markers gets them, replacing a pasted block", "[views][docs]") {
  std::vector<GeneratedSection> sections{
      {"Output", "output", FencedBlock("text", "the line")},
      {"Diagram", "diagram", FencedBlock("mermaid", "sequenceDiagram\n")}};
  std::string pasted = "# x\n\n## Output\n\n```\nhand-pasted\n```\n\nProse after.\n\n## Diagram\n";
  std::string out = RewritePage(pasted, sections);
  CHECK(out == "# x\n\n## Output\n\n" + BeginMarker("output") + "\n```text\nthe line\n```\n" +
                   EndMarker("output") + "\n\nProse after.\n\n## Diagram\n\n" +
                   BeginMarker("diagram") + "\n```mermaid\nsequenceDiagram\n```\n" +
                   EndMarker("diagram") + "\n");
  CHECK(RewritePage(out, sections) == out);

  std::string prose_first = "## Output\nWhat it prints:\n";
  CHECK(RewritePage(prose_first, sections) == "## Output\n\n" + BeginMarker("output") +
                                                  "\n```text\nthe line\n```\n" +
                                                  EndMarker("output") + "\n\nWhat it prints:\n");
  CHECK(RewritePage("# no sections\n", sections) == "# no sections\n");
  CHECK_THROWS_AS(RewritePage("## Output\n" + BeginMarker("output") + "\n", sections),
                  DocPageError);
  CHECK_THROWS_AS(RewritePage(EndMarker("output") + "\n" + BeginMarker("output") + "\n", sections),
                  DocPageError);
}

TEST_CASE("an atomic file appears whole, or not at all", "[views][file]") {
  TempDir dir;
  const std::string path = dir.File("t.svg");
  {
    AtomicFile file(path);
    CHECK(std::distance(std::filesystem::directory_iterator(dir.path()), {}) ==
          1);  // the temporary
    CHECK_FALSE(std::filesystem::exists(path));
    file.Commit("<svg/>\n");
  }
  CHECK(ReadFile(path) == "<svg/>\n");
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path()), {}) == 1);
  { AtomicFile abandoned(path); }  // never committed: the old file stays, no temporary left
  CHECK(ReadFile(path) == "<svg/>\n");
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path()), {}) == 1);

  CHECK_THROWS_AS(AtomicFile(dir.File("missing/t.svg")), OutputFileError);
  CHECK_THROWS_AS(AtomicFile(dir.path()), OutputFileError);
  CHECK_THROWS_AS(AtomicFile(""), OutputFileError);
  CHECK_THROWS_AS(AtomicFile("/dev/null"), OutputFileError);
}
