// dedupsim run, once its plan holds (cli/run_plan.h): the run's world (its database,
// backends/databases.h: the SQLite file or the PostgreSQL schema; the broker, the clock, the ids) set up before the trace's clock
// starts and torn down when Run returns or unwinds, then each scenario run and printed: its
// line (or JSON Lines), the trace on request, the differences --check finds, a Mermaid
// diagram after each line (--diagram), an SVG timeline (--timeline) and a step-through
// page (--html), the files written whole at the end.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/databases.h"
#include "core/duration.h"
#include "exit_status.h"
#include "lesson/runner.h"
#include "options.h"
#include "os/atomic_file.h"
#include "run_args.h"
#include "run_plan.h"
#include "views/color.h"
#include "views/html_steps.h"
#include "views/mermaid.h"
#include "views/svg_timeline.h"
#include "views/trace_text.h"
#include "world/broker/broker_setup.h"
#include "store/tables_reader.h"

namespace dedupsim::cli {

namespace {

int RunScenarios(const RunArgs& args, const std::vector<const Scenario*>& scenarios,
                 ScenarioEnv& env, std::optional<AtomicFile>& timeline,
                 std::optional<AtomicFile>& html) {
  const RunOptions& options = env.options;
  const bool json = args.format == "json";
  const bool color = !json && ShouldColor(*ParseColorChoice(args.color), ::isatty(STDOUT_FILENO) == 1,
                                          std::getenv("NO_COLOR"), std::getenv("TERM"));
  bool all_held = true;
  std::vector<TimelineSection> sections;
  // --html: the probe reads every table after each step, while the run goes on.
  std::vector<HtmlSection> html_sections;
  std::vector<TablesSnapshot> snapshots;
  std::unique_ptr<TablesReader> probe;
  if (html) {
    probe = env.backend.OpenTablesReader(&env.sides);
    env.recorder.SetObserver([&](const TraceEvent& e) { snapshots.push_back(probe->Read(e)); });
  }
  for (const Scenario* scenario : scenarios) {
    snapshots.clear();
    ScenarioResult result = RunScenario(*scenario, env, args.check);
    if (args.check && args.test_only_expect_hold_ms >= 0 && scenario->expected != nullptr) {
      // Test-only: the expectation of another --hold-ms, which this run cannot meet.
      RunOptions other = options;
      other.hold = std::chrono::milliseconds(args.test_only_expect_hold_ms);
      result.expected = scenario->expected(other);
      result.differences = Differences(scenario->name, result.expected, result.outcome.figures);
    }
    if (html) {
      html_sections.push_back({.scenario = std::string(scenario->name),
                               .line = result.outcome.line,
                               .events = result.events,
                               .snapshots = std::move(snapshots),
                               .marks = result.outcome.marks,
                               .backend = args.backend});
      snapshots.clear();
    }
    std::string diagram;
    if (!args.diagram.empty()) {
      diagram = MermaidDiagram(result.events, {.timings = true, .title = "dedupsim run " + std::string(scenario->name)});
    }
    if (timeline) {
      sections.push_back({.scenario = std::string(scenario->name),
                          .line = result.outcome.line,
                          .events = result.events,
                          .marks = result.outcome.marks});
    }
    if (json) {
      nlohmann::ordered_json j = ResultToJson(result, args.trace);
      if (!diagram.empty()) j["diagram"] = diagram;
      fmt::print("{}\n", j.dump());
    } else {
      const std::string& line = result.outcome.line;
      fmt::print("{}\n", color ? ColorizeLine(line, result.outcome.marks, !result.differences.empty())
                               : line);
      if (!diagram.empty()) fmt::print("{}\n", diagram);
      if (args.trace) {
        std::fflush(stdout);
        fmt::print(stderr, "--- trace of {} ---\n{}", scenario->name, FormatTrace(result.events));
      }
    }
    std::fflush(stdout);
    // A scenario that raises alerts (content-mismatch) lists them; they go where a person
    // will see them, whatever the format.
    if (const auto alerts = result.outcome.figures.find("alerts");
        alerts != result.outcome.figures.end()) {
      for (const auto& alert : *alerts) fmt::print(stderr, "dedupsim: alert: {}\n", alert.get<std::string>());
    }
    for (const std::string& difference : result.differences) {
      fmt::print(stderr, "dedupsim: check failed: {}\n", difference);
    }
    if (!result.differences.empty()) all_held = false;
  }
  env.recorder.SetObserver(nullptr);
  if (!CommitOutputFile(&html, [&] { return StepThroughPage(html_sections); })) return kExitCannotWrite;
  if (!CommitOutputFile(&timeline, [&] { return SvgTimeline(sections); })) return kExitCannotWrite;
  return all_held ? kExitOk : kExitCheckFailed;
}

}  // namespace

int Run(const RunArgs& args) {
  RunPlan plan;
  if (auto misfit = PlanRun(args, plan)) {
    fmt::print(stderr, "dedupsim: {}\n", *misfit);
    return kExitUsage;
  }
  const std::vector<const Scenario*>& scenarios = plan.scenarios;
  const BrokerKind broker_kind = *ParseBrokerKind(args.broker);  // checked by the parser

  std::optional<AtomicFile> timeline, html;
  if (int status = OpenPictureFiles(args.timeline, args.html, &timeline, &html); status != 0) {
    return status;
  }

  // The run's database and its side stores (backends/databases.h): SQLite's file, a temporary
  // one unless --db names it; or PostgreSQL's schema on a throwaway cluster for this command
  // (unless --dsn names a server), which a PostgreSQL run has instead of a file. Destroyed
  // (a temporary file removed, the cluster stopped and removed) when Run returns or unwinds.
  // Made before the trace's clock starts.
  LessonSettings settings;
  settings.file.journal = args.journal == "delete" ? JournalMode::kDelete : JournalMode::kWal;
  settings.file.synchronous =
      args.synchronous == "full" ? Synchronous::kFull : Synchronous::kNormal;
  settings.isolation = args.isolation == "serializable"      ? Isolation::kSerializable
                       : args.isolation == "repeatable-read" ? Isolation::kRepeatableRead
                                                             : Isolation::kReadCommitted;
  const std::unique_ptr<LessonDatabase> database = OpenLessonDatabase(
      {.backend = args.backend, .path = args.db, .dsn = args.dsn, .schema = args.pg_schema},
      settings);

  RunOptions options = args.options;
  options.broker = broker_kind;
  if (broker_kind != BrokerKind::kSimulated) {
    // A real broker's duplicate window is the server's, waited out in real time (at most
    // 30s: checked by PlanRun).
    if (!args.Given("--dedup-window")) options.dedup_window = std::chrono::seconds(1);
  }

  // The broker: a private server for this command (unless --broker-url names one), stopped
  // when Run returns or unwinds. Started before the trace's clock starts.
  std::unique_ptr<BrokerSetup> broker = BrokerSetup::Start(broker_kind, args.broker_url);

  // --seed: the ids from the seed and a clock that steps a millisecond a reading, so a
  // rehearsal's pictures show the lecture's ids and times.
  SystemClock system_clock;
  std::optional<SteppingClock> stepping;
  if (args.seed >= 0) stepping.emplace();
  Clock& clock = stepping ? static_cast<Clock&>(*stepping) : system_clock;
  Recorder recorder;
  IdGenerator ids = args.seed >= 0 ? IdGenerator(static_cast<uint64_t>(args.seed)) : IdGenerator();
  ScenarioEnv env{options, database->backend(), database->sides(), clock, recorder, ids};
  env.brokers = &broker->brokers();
  int status = kExitOk;
  try {
    status = RunScenarios(args, scenarios, env, timeline, html);
  } catch (const files::FileError& e) {
    fmt::print(stderr, "dedupsim: {}\n", e.what());
    return kExitUsage;
  } catch (const BrokerError&) {
    throw;  // the broker's errors name the broker themselves
  } catch (const DatabaseError& e) {
    database->Rethrow(e);  // every database error names the file, or the server or schema
  }
  return status;
}

}  // namespace dedupsim::cli
