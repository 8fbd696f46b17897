// Scenario files (lib/files/scenario_file.h, scenarios/file_scenario.h, `run --file`,
// `explain --file`): the shipped lessons, the expression language, the errors, and the
// mutations a lesson runner could hide (a line that ignores a figure, a --check that never
// fails, a fault that never fires).
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "exit_status.h"
#include "file_scenario.h"
#include "files/expression.h"
#include "files/scenario_file.h"
#include "files/scenario_line.h"
#include "lesson/runner.h"
#include "support.h"

namespace dedupsim::scenario_files_test {
namespace {

using testing::CliResult;
using testing::Fixture;
using testing::RunCli;
using testing::TempDir;
using testing::WriteFile;

std::string Example(const std::string& name) {
  return std::string(DEDUPSIM_SOURCE_DIR) + "/examples/scenarios/" + name + ".toml";
}

std::string Consumers() { return std::string(DEDUPSIM_SOURCE_DIR) + "/examples/consumers/"; }

// The one JSON object `run --file FILE --format json --check ARGS` printed.
nlohmann::json RunJson(const std::string& file, std::vector<std::string> args,
                       int* code = nullptr) {
  std::vector<std::string> all = {"run", "--file", file, "--format", "json", "--check"};
  all.insert(all.end(), args.begin(), args.end());
  CliResult r = RunCli(all);
  if (code != nullptr) {
    *code = r.exit_code;
  } else {
    INFO(r.err);
    REQUIRE(r.exit_code == kExitOk);
  }
  return nlohmann::json::parse(r.out);
}

// A lesson in a temporary folder, next to which the consumer files are reached by absolute
// path.
std::string Lesson(const TempDir& dir, const std::string& body,
                   const std::string& name = "t.toml") {
  std::string path = dir.File(name);
  WriteFile(path, body);
  return path;
}

std::string ErrorOf(const std::string& body) {
  TempDir dir;
  std::string path = Lesson(dir, body, "lesson.toml");
  try {
    files::LoadScenarioFile(path);
  } catch (const files::FileError& e) {
    std::string what = e.what();
    // Relative to the folder, so the expected strings stay short.
    size_t at = what.find("lesson.toml");
    return at == std::string::npos ? what : what.substr(at);
  }
  return "(no error)";
}

// A small inbox lesson: the order delivered `deliveries` times.
const char* kInboxLesson = R"(tag = "t"
line = "reserved {reserved} after {n} deliveries"
[[consumer]]
name = "inventory"
builtin = "inbox"
[[deliver]]
copies = "deliveries"
[[figure]]
name = "reserved"
sql = "SELECT Reserved FROM StockItems WHERE BookId = :BookId"
[[figure]]
name = "n"
count = "deliveries"
)";

}  // namespace

TEST_CASE("the shipped lessons give their figures and pass --check", "[scenario-files][cli]") {
  // Each figure asserted at a --quantity other than the default, so a figure read from the
  // wrong place, a line that does not follow its figures, or an expectation that ignores
  // the options fails here.
  SECTION("producer-resend: the inbox reserves twice for a resend under a new id") {
    nlohmann::json j =
        RunJson(Example("producer-resend"), {"--quantity", "3", "--deliveries", "3"});
    CHECK(j["scenario"] == "producer-resend");
    CHECK(j["orderCopies"] == 4);
    CHECK(j["processed"] == 2);
    CHECK(j["reserved"] == 6);
    CHECK(j["check"]["expected"]["reserved"] == 6);  // quantity * 2, from the option
    CHECK(j["line"] ==
          "[producer-resend]    4 deliveries, the last a resend under a new id -> processed: 2; "
          "Dune reserved: 6");
  }
  SECTION("exercise-natural-key: the same order under two ids reserves once") {
    nlohmann::json j = RunJson(Example("exercise-natural-key"), {"--quantity", "3"});
    CHECK(j["processed"] == nlohmann::json({true, false}));
    CHECK(j["reservations"] == 1);
    CHECK(j["reserved"] == 3);
    CHECK(j["line"] ==
          "[natural-key]        same order, two MessageIds -> processed: True, False; "
          "reservation rows: 1; Dune reserved: 3");
  }
  SECTION("exercise-correlation-id: redeliveries and the resend are all skipped") {
    nlohmann::json j =
        RunJson(Example("exercise-correlation-id"), {"--quantity", "3", "--deliveries", "3"});
    CHECK(j["copies"] == 4);
    CHECK(j["processed"] == 1);
    CHECK(j["skipped"] == 3);
    CHECK(j["reserved"] == 3);
  }
  SECTION("exercise-shared-key: the notification takes the stock's row for its own") {
    nlohmann::json j = RunJson(Example("exercise-shared-key"), {"--quantity", "3"});
    CHECK(j["reserved"] == 3);
    CHECK(j["emails"] == 0);
    CHECK(j["notificationSkipped"] == nlohmann::json({true}));
  }
  SECTION("email-crash: one email, then reconciliation, in every crash mode") {
    for (const char* mode : {"throw", "exit", "kill"}) {
      INFO(mode);
      nlohmann::json j = RunJson(Example("email-crash"), {"--crash-mode", mode});
      CHECK(j["emails"] == 1);
      CHECK(j["crashed"] == 1);
      CHECK(j["reconcile"] == 1);
      CHECK(j["inProgress"] == 1);
    }
  }
  SECTION("cache-crash: a consumer file with a cache of its own, crashed between the stores") {
    // Mutation caught: the cache not kept from the first delivery to the redelivery (a
    // fresh cache per delivery would reserve: 2), or the crash not striking (crashed 0).
    for (const char* mode : {"throw", "exit", "kill"}) {
      INFO(mode);
      nlohmann::json j = RunJson(Example("cache-crash"), {"--crash-mode", mode});
      CHECK(j["reserved"] == 0);
      CHECK(j["crashed"] == 1);
      CHECK(j["skipped"] == 1);
    }
  }
  SECTION("email-reconcile-crash: the provider's records settle the redelivery") {
    // Mutation caught: the provider's records not kept between deliveries (the redelivery
    // would send again: emails 2), the "emails" figure not counting the provider's sends (0).
    for (const char* mode : {"throw", "exit", "kill"}) {
      INFO(mode);
      nlohmann::json j = RunJson(Example("email-reconcile-crash"), {"--crash-mode", mode});
      CHECK(j["emails"] == 1);
      CHECK(j["crashed"] == 1);
      CHECK(j["skipped"] == 1);
      CHECK(j["reconcile"] == 0);
      CHECK(j["inProgress"] == 0);
    }
  }
  SECTION("a built-in consumer with a second store runs in a lesson too") {
    TempDir dir;
    const std::string path = dir.File("race.toml");
    testing::WriteFile(
        path,
        "tag = \"t\"\nline = \"reserved {reserved}\"\n[[consumer]]\nname = \"c\"\nbuiltin = "
        "\"cache-check-then-set\"\n[[deliver]]\nto = \"c\"\ncopies = 2\n"
        "[[figure]]\nname = \"reserved\"\nsql = \"SELECT Reserved FROM StockItems "
        "WHERE BookId = :BookId\"\n[expect]\nreserved = \"quantity\"\n");
    nlohmann::json j = RunJson(path, {"--quantity", "3"});
    CHECK(j["reserved"] == 3);  // the redelivery found the key in the cache
  }
  SECTION("exercise-claim-last: reserved once; the second waits only when it starts in time") {
    nlohmann::json j = RunJson(Example("exercise-claim-last"),
                               {"--quantity", "3", "--hold-ms", "150", "--stagger-ms", "20"});
    CHECK(j["processed"] == nlohmann::json({true, false}));
    CHECK(j["reserved"] == 3);
    CHECK(j["inboxRows"] == 1);
    CHECK(j["waited"] == 1);
    nlohmann::json late =
        RunJson(Example("exercise-claim-last"),
                {"--hold-ms", "50", "--stagger-ms", "120", "--instances", "processes"});
    CHECK(late["processed"] == nlohmann::json({true, false}));
    CHECK(late["waited"] == 0);
    CHECK(late["check"]["expected"]["waited"] == 0);  // staggerMs < holdMs ? 1 : 0
  }
}

TEST_CASE("run --file DIR runs every lesson of the folder, in name order",
          "[scenario-files][cli]") {
  CliResult r = RunCli({"run", "--file", std::string(DEDUPSIM_SOURCE_DIR) + "/examples/scenarios",
                        "--hold-ms", "100", "--stagger-ms", "20", "--check"});
  INFO(r.err);
  // --hold-ms fits only the claim-last lesson: refused for the folder, never ignored.
  CHECK(r.exit_code == kExitUsage);
  CHECK(r.err.find("--hold-ms/--stagger-ms does not apply to scenario") != std::string::npos);
  r = RunCli(
      {"run", "--file", std::string(DEDUPSIM_SOURCE_DIR) + "/examples/scenarios", "--check"});
  INFO(r.err);
  REQUIRE(r.exit_code == kExitOk);
  std::vector<std::string> lines = testing::SplitLines(r.out);
  REQUIRE(lines.size() == 8);
  CHECK(lines[0].rfind("[cache-crash]", 0) == 0);
  CHECK(lines[1].rfind("[email-crash]", 0) == 0);
  CHECK(lines[2].rfind("[email-reconcile-crash]", 0) == 0);
  CHECK(lines[3].rfind("[claim-last]", 0) == 0);
  CHECK(lines[7].rfind("[producer-resend]", 0) == 0);
}

TEST_CASE("a lesson's --check exits 1 when a figure is not what it expects",
          "[scenario-files][cli]") {
  // Mutation caught: a --check that never fails (or never evaluates the expectation).
  TempDir dir;
  std::string path =
      Lesson(dir, std::string(kInboxLesson) + "[expect]\nreserved = \"quantity * 2\"\n");
  int code = 0;
  nlohmann::json j = RunJson(path, {"--deliveries", "3"}, &code);
  CHECK(code == kExitCheckFailed);
  CHECK(j["check"]["passed"] == false);
  CHECK(j["check"]["differences"][0] == "t: reserved is 2, expected 4");
  CliResult text = RunCli({"run", "--file", path, "--check"});
  CHECK(text.exit_code == kExitCheckFailed);
  CHECK(text.err.find("dedupsim: check failed: t: reserved is 2, expected 4") != std::string::npos);
  // The right expectation passes; an expectation over a figure uses the run's value.
  std::string right = Lesson(
      dir, std::string(kInboxLesson) + "[expect]\nreserved = \"quantity\"\nn = \"deliveries\"\n",
      "right.toml");
  CHECK(RunCli({"run", "--file", right, "--check", "--deliveries", "4"}).exit_code == kExitOk);
}

TEST_CASE("the line is its template over the figures", "[scenario-files]") {
  // Mutation caught: a template that prints a figure's name, a stale value, or drops it.
  TempDir dir;
  files::ScenarioFile file = files::LoadScenarioFile(Lesson(dir, kInboxLesson));
  for (int64_t quantity : {2, 5}) {
    RunOptions options;
    options.quantity = quantity;
    options.deliveries = 3;
    Fixture f(options);
    Outcome out = RunScenarioFile(file, f.env, {});
    CHECK(out.figures["reserved"] == quantity);
    CHECK(out.line == fmt::format("[t]                  reserved {} after 3 deliveries", quantity));
  }
  nlohmann::ordered_json figures = {{"reserved", true}, {"n", {true, false}}};
  CHECK(files::RenderLine(file, figures) ==
        "[t]                  reserved True after True, False deliveries");
}

TEST_CASE("faults fire at their hook points", "[scenario-files]") {
  // Mutation caught: a fault that is parsed but never installed (reserved would be the
  // quantity, crashed 0), or a hold that does not wait.
  TempDir dir;
  const std::string crash = std::string(R"(line = "{reserved} {crashed}"
[[consumer]]
name = "inventory"
builtin = "inbox"
[[deliver]]
fault = "crash at BeforeCommit"
[[figure]]
name = "reserved"
sql = "SELECT Reserved FROM StockItems"
[[figure]]
name = "crashed"
count = "crashed"
)");
  {
    Fixture f;
    Outcome out = RunScenarioFile(files::LoadScenarioFile(Lesson(dir, crash)), f.env, {});
    CHECK(out.figures["reserved"] == 0);  // the transaction died before its commit
    CHECK(out.figures["crashed"] == 1);
  }
  const std::string hold = std::string(R"(line = "{reserved}"
[[consumer]]
name = "inventory"
file = ")") + Consumers() + R"(claim-last.toml"
[[deliver]]
fault = "hold 300ms at BeforeCommit"
[[figure]]
name = "reserved"
sql = "SELECT Reserved FROM StockItems"
)";
  Fixture f;
  RunScenarioFile(files::LoadScenarioFile(Lesson(dir, hold, "hold.toml")), f.env, {});
  int64_t hook_at = -1;
  int64_t commit_at = -1;
  for (const TraceEvent& e : f.recorder.Events()) {
    if (e.kind == "hook" && e.detail == "BeforeCommit") hook_at = e.at_us;
    if (e.detail.rfind("COMMIT", 0) == 0) commit_at = e.at_us;
  }
  REQUIRE(hook_at >= 0);
  REQUIRE(commit_at >= 0);
  CHECK(commit_at - hook_at >= 300000);  // a sleep waits at least its time
}

TEST_CASE("scenario file errors name FILE:LINE:COLUMN and what was expected", "[scenario-files]") {
  const std::string head =
      "line = \"{r}\"\n[[consumer]]\nname = \"inventory\"\nbuiltin = \"inbox\"\n";
  const std::string figure =
      "[[figure]]\nname = \"r\"\nsql = \"SELECT Reserved FROM StockItems\"\n";
  CHECK(ErrorOf("lines = \"x\"\n")
            .rfind("lesson.toml:1:1: unknown key 'lines' (expected name, tag", 0) == 0);
  CHECK(ErrorOf(head + "[[deliver]]\nfault = \"crash at AfterSend\"\n" + figure) ==
        "lesson.toml:6:9: consumer 'inventory' passes no hook point AfterSend (its hook points: "
        "BeforeCommit)");
  CHECK(
      ErrorOf(head + "[[deliver]]\nfault = \"explode at BeforeCommit\"\n" + figure)
          .rfind("lesson.toml:6:9: unknown fault 'explode at BeforeCommit' (expected \"hold 500ms "
                 "at BeforeCommit\" or \"crash at AfterSend\")",
                 0) == 0);
  CHECK(
      ErrorOf(head + "[[deliver]]\n" + figure + "[expect]\nr = \"quantity * 2 + reservd\"\n") ==
      "lesson.toml:10:21: unknown name 'reservd' (expected a figure of this file or an option: "
      "quantity, deliveries, holdMs, staggerMs, crashMode, instances) in: quantity * 2 + reservd");
  // Issue 28: an expectation naming its own figure can never fail. Mutation caught: the
  // check removed (`r = "r"` loads, and --check passes whatever r is).
  CHECK(ErrorOf(head + "[[deliver]]\n" + figure + "[expect]\nr = \"r\"\n") ==
        "lesson.toml:10:6: expect r names the figure it checks ('r'): it would hold whatever "
        "the run did; write what the lesson expects from the options (quantity, deliveries, "
        "...) or other figures, in: r");
  CHECK(ErrorOf(head + "[[deliver]]\n" + figure + "[expect]\nr = \"quantity *\"\n") ==
        "lesson.toml:10:16: expected a value (a number, true, false, \"text\", a name or a "
        "parenthesis), found 'end' in: quantity *");
  CHECK(ErrorOf("line = \"{reserved}\"\n[[consumer]]\nname = \"inventory\"\nbuiltin = "
                "\"inbox\"\n[[deliver]]\n" +
                figure) ==
        "lesson.toml:1:9: the line names no figure 'reserved' (expected one of r)");
  CHECK(ErrorOf(head + "[[deliver]]\n[[figure]]\nname = \"r\"\nsql = \"UPDATE StockItems SET "
                       "Reserved = 0 RETURNING Reserved\"\n")
            .rfind("lesson.toml:8:15: figure 'r': UPDATE StockItems is not allowed: a figure only "
                   "reads rows of the run's tables (SELECT)",
                   0) == 0);
  CHECK(ErrorOf(head + "[[deliver]]\n[[figure]]\nname = \"r\"\nsql = \"SELECT Reservd FROM "
                       "StockItems\"\n") ==
        "lesson.toml:8:15: figure 'r': SQL does not prepare: no such column: Reservd (in: SELECT "
        "Reservd FROM StockItems)");
  CHECK(ErrorOf(head + "[[deliver]]\n[[figure]]\nname = \"r\"\nsql = \"SELECT Reserved FROM "
                       "StockItems WHERE BookId = :Book\"\n")
            .rfind("lesson.toml:8:55: figure 'r': unknown parameter :Book", 0) == 0);
  CHECK(ErrorOf(head + "[[deliver]]\nrace = true\nfault = \"crash at BeforeCommit\"\n" + figure) ==
        "lesson.toml:5:1: a race needs fault = \"hold 500ms at POINT\": where instance A holds "
        "while B starts");
  CHECK(ErrorOf(head + "[[deliver]]\nto = \"inventroy\"\n" + figure) ==
        "lesson.toml:6:6: no [[consumer]] named 'inventroy' (expected one of inventory)");
  CHECK(ErrorOf("line = \"x\"\n[[consumer]]\nname = \"c\"\nfile = \"missing.toml\"\n")
            .find("missing.toml: cannot be read") != std::string::npos);
}

TEST_CASE("run --file refuses what a lesson cannot take, and bad files, with exit 2",
          "[scenario-files][cli]") {
  CliResult r = RunCli({"run", "--file", Example("exercise-natural-key"), "--crash-mode", "kill"});
  CHECK(r.exit_code == kExitUsage);
  CHECK(r.err == "dedupsim: " + Example("exercise-natural-key") +
                     ": --crash-mode does not apply to scenario 'exercise-natural-key': it has no "
                     "crash point whose way of dying --crash-mode chooses\n");
  CHECK(RunCli({"run", "--file", Example("exercise-natural-key"), "--retention-days", "3"})
            .exit_code == kExitUsage);
  CHECK(RunCli({"run", "--file", Example("exercise-natural-key"), "--deliveries", "3"}).exit_code ==
        kExitUsage);
  TempDir dir;
  std::string bad = Lesson(dir, "lines = 3\n");
  r = RunCli({"run", "--file", bad});
  CHECK(r.exit_code == kExitUsage);
  CHECK(r.err.find("t.toml:1:1: unknown key 'lines'") != std::string::npos);
  CHECK(testing::ReadFile(bad) == "lines = 3\n");  // only read
  CHECK(RunCli({"run"}).exit_code == kExitUsage);
}

TEST_CASE("a lesson file has every view a built-in has", "[scenario-files][cli]") {
  TempDir dir;
  const std::string file = Example("email-crash");
  CliResult r = RunCli({"run", "--file", file, "--trace", "--diagram", "mermaid", "--timeline",
                        dir.File("t.svg"), "--html", dir.File("t.html")});
  INFO(r.err);
  REQUIRE(r.exit_code == kExitOk);
  CHECK(r.out.find("sequenceDiagram") != std::string::npos);
  CHECK(r.err.find("--- trace of email-crash ---") != std::string::npos);
  CHECK(r.err.find("crash at AfterSend") != std::string::npos);
  CHECK(testing::ReadFile(dir.File("t.svg")).find("<svg") != std::string::npos);
  CHECK(testing::ReadFile(dir.File("t.html")).find("email-crash") != std::string::npos);
}

TEST_CASE("explain --file prints the file's own lesson", "[scenario-files][cli]") {
  CliResult r = RunCli({"explain", "--file", Example("exercise-natural-key"), "--width", "200"});
  REQUIRE(r.exit_code == kExitOk);
  CHECK(r.out.find("Here the consumer keeps no Inbox (examples/consumers/natural-key.toml).") !=
        std::string::npos);
  CHECK(r.out.find("dedupsim run --file examples/scenarios/producer-resend.toml") !=
        std::string::npos);
  TempDir dir;
  r = RunCli({"explain", "--file", Lesson(dir, std::string(kInboxLesson))});
  CHECK(r.exit_code == kExitUsage);
  CHECK(r.err.find("has no lesson") != std::string::npos);
}

TEST_CASE("the expression language", "[scenario-files]") {
  auto eval = [](const std::string& text) {
    files::Expression e = files::Expression::Parse(text, {"f", 1, 1});
    return e.Evaluate([](std::string_view name) -> std::optional<nlohmann::json> {
      if (name == "quantity") return 3;
      if (name == "mode") return "kill";
      return std::nullopt;
    });
  };
  CHECK(eval("quantity * 2 + 1") == 7);
  CHECK(eval("1 + quantity * 2") == 7);
  CHECK(eval("(1 + quantity) * 2") == 8);
  CHECK(eval("10 - 4 - 3") == 3);
  CHECK(eval("-quantity / 2") == -1);
  CHECK(eval("quantity > 2 and not (quantity == 4)") == true);
  CHECK(eval("quantity < 2 ? 1 : 0") == 0);
  CHECK(eval("mode == \"kill\"") == true);
  CHECK(eval("[true, quantity]") == nlohmann::json({true, 3}));
  auto error = [&](const std::string& text) {
    try {
      eval(text);
    } catch (const files::FileError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(error("quantity / 0") == "f:1:10: division by zero");
  CHECK(error("true + 1") == "f:1:6: '+' takes integers, not a boolean and an integer");
  CHECK(error("quantity ? 1 : 2") ==
        "f:1:10: the condition before '?' is an integer, expected a boolean");
  CHECK(error("(1") == "f:1:3: expected ')', found 'end' in: (1");
  CHECK(error("1 $ 2") == "f:1:3: unexpected character '$' in: 1 $ 2");
}

}  // namespace dedupsim::scenario_files_test
