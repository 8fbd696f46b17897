// dedupsim run: runs scenarios by name and prints their lines (or JSON Lines), the trace
// on request, the differences --check finds, a Mermaid diagram after each line
// (--diagram) and an SVG timeline file (--timeline).
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "world/broker/broker_setup.h"
#include "commands.h"
#include "core/duration.h"
#include "exit_status.h"
#include "file_scenario.h"
#include "files/scenario_file.h"
#include "lesson/crash.h"
#include "lesson/options.h"
#include "lesson/runner.h"
#include "lesson/tables_reader.h"
#include "options.h"
#include "outputs.h"
#include "os/atomic_file.h"
#include "postgres/cluster.h"
#include "postgres/store.h"
#include "scenarios.h"
#include "sqlite/database.h"
#include "sqlite/side_store.h"
#include "sqlite/store.h"
#include "views/color.h"
#include "views/html_steps.h"
#include "views/mermaid.h"
#include "views/svg_timeline.h"
#include "views/trace_text.h"
#include "world/table_probe.h"

namespace dedupsim::cli {

namespace {

struct RunArgs {
  std::vector<std::string> names;
  std::vector<std::string> files;  // --file: scenario files or folders of them
  std::string db;
  std::string format = "text";
  RunOptions options;  // the lesson options (lesson/options.h), read into it as parsed
  bool check = false;
  int test_only_expect_hold_ms = -1;  // tests only: --check compares with this hold's expectation
  bool trace = false;
  std::string journal = "wal";
  std::string synchronous = "normal";
  std::string diagram;   // "" or "mermaid"
  std::string timeline;  // SVG file to write, or ""
  std::string html;      // step-through page to write, or ""
  std::string color = "auto";
  int64_t seed = -1;  // -1: ids from the system's randomness and the wall clock
  std::string backend = "sqlite";
  std::string dsn;                     // postgres: an existing server; "": a throwaway cluster
  std::string pg_schema = "dedupsim";  // postgres: the schema dedupsim creates and owns
  std::string isolation = "read-committed";
  std::string broker = "sim";
  std::string broker_url;  // nats, rabbitmq: a server the user runs; "": a private one
  bool given_db = false, given_journal = false, given_isolation = false, given_pg_schema = false;
  // Set after parsing: the lesson options given (their flags).
  std::vector<std::string> given;
  std::string dedup_window_text;  // --dedup-window as typed, when given
  bool Given(std::string_view flag) const {
    return std::find(given.begin(), given.end(), flag) != given.end();
  }
};

// "naive, inbox, ...": the scenarios with this trait, which take the option it stands for.
std::string TakenBy(unsigned trait) {
  std::string names;
  for (const Scenario* s : AllScenarios()) {
    if (s->traits & trait) names += (names.empty() ? "" : ", ") + std::string(s->name);
  }
  return names;
}

bool IsFolder(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string ValidNames() {
  std::string names;
  for (const Scenario* s : AllScenarios()) names += std::string(s->name) + ", ";
  return names + "all, everything";
}

// Expands all/everything and checks every name; sets *error on an unknown one.
std::vector<const Scenario*> Resolve(const std::vector<std::string>& names, std::string* error) {
  std::vector<const Scenario*> out;
  for (const std::string& name : names) {
    if (name == "all" || name == "everything") {
      for (const Scenario* s : AllScenarios()) {
        if (name == "everything" || s->in_post) out.push_back(s);
      }
    } else if (const Scenario* s = FindScenario(name)) {
      out.push_back(s);
    } else {
      *error = fmt::format("unknown scenario '{}' (valid: {})", name, ValidNames());
      return {};
    }
  }
  return out;
}

// A one-line reason when the backend options do not fit the scenarios or each other.
std::optional<std::string> BackendMisfit(const RunArgs& args,
                                         const std::vector<const Scenario*>& scenarios) {
  if (args.backend != "postgres") {
    if (!args.dsn.empty()) return "--dsn needs --backend postgres";
    if (args.given_pg_schema) return "--pg-schema needs --backend postgres";
    if (args.given_isolation)
      return "--isolation needs --backend postgres (SQLite is always serializable)";
    if (args.Given("--idle-timeout-ms"))
      return "--idle-timeout-ms needs --backend postgres (SQLite has no session timeout: "
             "nothing ends a hung writer's transaction but its death)";
    return std::nullopt;
  }
  if (args.given_db) return "--db is for SQLite; with --backend postgres use --dsn";
  if (args.given_journal)
    return "--journal and --synchronous are SQLite's; not with --backend postgres";
  std::string missing;
  for (const Scenario* s : scenarios) {
    if ((s->traits & kAnyBackend) == 0)
      missing += (missing.empty() ? "" : ", ") + std::string(s->name);
  }
  if (!missing.empty()) return fmt::format("not on --backend postgres yet: {}", missing);
  return std::nullopt;
}

int RunScenarios(const RunArgs& args, const std::vector<const Scenario*>& scenarios,
                 ScenarioEnv& env, std::optional<AtomicFile>& timeline,
                 std::optional<AtomicFile>& html);

// The lessons of --file, read and checked before anything runs; they and their Scenario
// views live as long as the run.
struct FileLessons {
  std::vector<std::unique_ptr<files::ScenarioFile>> files;
  std::vector<std::unique_ptr<Scenario>> scenarios;
  FileRunOverrides overrides;
};

int Run(const RunArgs& args) {
  std::string error;
  if (args.names.empty() && args.files.empty()) {
    fmt::print(stderr, "dedupsim: run needs scenarios: names (see dedupsim list) or --file FILE\n");
    return kExitUsage;
  }
  std::vector<const Scenario*> scenarios = Resolve(args.names, &error);
  if (!error.empty()) {
    fmt::print(stderr, "dedupsim: {}\n", error);
    return kExitUsage;
  }
  // A scenario named alone must take every option given; with several, each option
  // applies to the scenarios it fits.
  if (args.names.size() == 1 && scenarios.size() == 1 && args.files.empty()) {
    if (auto misfit = OptionMisfit(*scenarios.front(), args.given)) {
      fmt::print(stderr, "dedupsim: {} (see dedupsim run --help)\n", *misfit);
      return kExitUsage;
    }
  }
  // Every scenario file must take every option given: a lesson never ignores one.
  FileLessons lessons;
  lessons.overrides = {.hold = args.Given("--hold-ms"), .stagger = args.Given("--stagger-ms")};
  try {
    for (const std::string& path : args.files) {
      std::vector<std::string> paths = IsFolder(path) ? files::ScenarioFilesIn(path)
                                                      : std::vector<std::string>{path};
      for (const std::string& one : paths) {
        lessons.files.push_back(std::make_unique<files::ScenarioFile>(files::LoadScenarioFile(one)));
        lessons.scenarios.push_back(
            std::make_unique<Scenario>(AsScenario(*lessons.files.back(), lessons.overrides)));
        if (auto misfit = OptionMisfit(*lessons.scenarios.back(), args.given)) {
          fmt::print(stderr, "dedupsim: {}: {}\n", one, *misfit);
          return kExitUsage;
        }
        scenarios.push_back(lessons.scenarios.back().get());
      }
    }
  } catch (const files::FileError& e) {
    fmt::print(stderr, "dedupsim: {}\n", e.what());
    return kExitUsage;
  }

  const bool postgres = args.backend == "postgres";
  if (auto misfit = BackendMisfit(args, scenarios)) {
    fmt::print(stderr, "dedupsim: {}\n", *misfit);
    return kExitUsage;
  }

  // The outputs may never be a file the run uses (cli/outputs.h): the database, its
  // companions and side stores, a scenario file, a consumer file one names, each other.
  std::vector<OutputFile> outputs;
  if (!args.timeline.empty()) outputs.push_back({"--timeline", args.timeline});
  if (!args.html.empty()) outputs.push_back({"--html", args.html});
  std::vector<UsedFile> used;
  if (!args.db.empty()) used = DatabaseFiles(args.db);
  for (const auto& lesson : lessons.files) {
    used.push_back({lesson->path, fmt::format("the scenario file {}", lesson->path)});
    for (const files::ScenarioConsumer& c : lesson->consumers) {
      if (!c.file) continue;
      used.push_back({c.file->file().path, fmt::format("the consumer file {}, named by {}",
                                                       c.file->file().path, lesson->path)});
    }
  }
  if (auto misfit = OutputMisfit(outputs, used)) {
    fmt::print(stderr, "dedupsim: {}\n", *misfit);
    return kExitUsage;
  }

  const BrokerKind broker_kind = *ParseBrokerKind(args.broker);  // checked by the parser
  if (broker_kind == BrokerKind::kSimulated && !args.broker_url.empty()) {
    fmt::print(stderr, "dedupsim: --broker-url needs --broker nats or rabbitmq\n");
    return kExitUsage;
  }
  for (const Scenario* s : scenarios) {
    if (std::string why = BrokerMisfit(*s, broker_kind); !why.empty()) {
      fmt::print(stderr, "dedupsim: {}\n", why);
      return kExitUsage;
    }
  }

  // The timeline's file is created (as a temporary) before anything runs, so a path that
  // cannot be written costs no run and leaves nothing behind.
  std::optional<AtomicFile> timeline;
  if (!args.timeline.empty()) {
    if (!EndsWithSvg(args.timeline)) {
      fmt::print(stderr, "dedupsim: --timeline {}: the file must end in .svg (it is SVG)\n",
                 args.timeline);
      return kExitUsage;
    }
    if (!OpenOutputFile(args.timeline, &timeline)) return kExitCannotWrite;
  }

  std::optional<AtomicFile> html;
  if (!OpenOutputFile(args.html, &html)) return kExitCannotWrite;

  DatabaseSettings settings;
  settings.journal = args.journal == "delete" ? JournalMode::kDelete : JournalMode::kWal;
  settings.synchronous = args.synchronous == "full" ? Synchronous::kFull : Synchronous::kNormal;
  // SQLite: the run's file, a temporary one unless --db names it. A PostgreSQL run has none.
  std::optional<DatabaseFile> db;
  if (!postgres) {
    db.emplace(args.db.empty() ? DatabaseFile::CreateTemporary(settings, SetUpConnection::kKeep)
                               : DatabaseFile::Open(args.db, settings));
  }

  RunOptions options = args.options;
  options.broker = broker_kind;
  if (broker_kind != BrokerKind::kSimulated) {
    // A real broker's duplicate window is the server's, waited out in real time.
    if (!args.Given("--dedup-window")) options.dedup_window = std::chrono::seconds(1);
    if (options.dedup_window > std::chrono::seconds(30)) {
      fmt::print(stderr,
                 "dedupsim: --dedup-window {}: on a real broker the lesson waits the window out "
                 "in real time: at most 30s\n",
                 args.dedup_window_text);
      return kExitUsage;
    }
  }

  // PostgreSQL: a throwaway cluster for this command (unless --dsn names a server), our own
  // schema in it, and the backend the scenarios run on. Destroyed (the cluster stopped and
  // removed) when Run returns or unwinds. Started before the trace's clock starts.
  std::optional<ThrowawayCluster> cluster;
  std::optional<PgDatabase> pg;
  std::unique_ptr<Backend> backend;
  if (postgres) {
    if (args.dsn.empty()) cluster.emplace(ThrowawayCluster::Start());
    pg.emplace(PgDatabase::Open(args.dsn.empty() ? cluster->conninfo() : args.dsn, args.pg_schema));
    Isolation isolation = args.isolation == "serializable"      ? Isolation::kSerializable
                          : args.isolation == "repeatable-read" ? Isolation::kRepeatableRead
                                                                : Isolation::kReadCommitted;
    backend = std::make_unique<PgBackend>(*pg, isolation);
  } else {
    backend = std::make_unique<SqliteBackend>(*db);
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
  SqliteFiles sqlite = db ? SqliteFiles(*db) : SqliteFiles(settings);
  ScenarioEnv env{options, *backend, sqlite, clock, recorder, ids};
  env.brokers = &broker->brokers();
  try {
    return RunScenarios(args, scenarios, env, timeline, html);
  } catch (const files::FileError& e) {
    fmt::print(stderr, "dedupsim: {}\n", e.what());
    return kExitUsage;
  } catch (const BrokerError&) {
    throw;  // the broker's errors name the broker themselves
  } catch (const DatabaseError& e) {
    if (postgres) throw;             // PostgreSQL's errors name the server or schema themselves
    throw InDatabase(db->path(), e);  // every database error names the file
  }
}

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
    probe = OpenTablesReader(env);
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

// A row of the lesson options table as a CLI option reading into options: its help text
// names the scenarios that take it and its default; its value is checked as the row says.
void AddLessonOption(CLI::App* sub, const LessonOption& row, RunOptions& options) {
  const std::string flag(row.flag);
  const std::string help = LessonOptionHelp(row, TakenBy(row.trait));
  CLI::Option* option = nullptr;
  switch (row.kind) {
    case OptionKind::kDecimal: {
      option = sub->add_option_function<std::string>(
          flag,
          [&options, &row, flag](const std::string& text) {
            DecimalResult r = ParseDecimal(text, static_cast<uint64_t>(row.min),
                                           static_cast<uint64_t>(row.max));
            if (!r.error.empty()) throw CLI::ValidationError(flag, r.error);
            row.set(options, static_cast<int64_t>(r.value));
          },
          help);
      // The range shows in --help and the generated reference as INT:MIN..MAX; the value is
      // checked by the function above (this validator only describes it).
      option->check(CLI::Validator([](const std::string&) { return std::string(); },
                                   std::to_string(row.min) + ".." + std::to_string(row.max)));
      option->type_name("INT");
      break;
    }
    case OptionKind::kChoice: {
      std::vector<std::string> choices(row.choices.begin(), row.choices.end());
      option = sub->add_option_function<std::string>(
          flag,
          [&options, &row](const std::string& text) {
            for (size_t i = 0; i < row.choices.size(); ++i) {
              if (row.choices[i] == text) row.set(options, static_cast<int64_t>(i));
            }
          },
          help);
      option->check(CLI::IsMember(choices));
      break;
    }
    case OptionKind::kDuration:
      option = sub->add_option_function<std::string>(
          flag,
          [&options, &row](const std::string& text) {
            row.set(options, ParseDuration(text)->count());  // checked by the validator below
          },
          help);
      option->check(CLI::Validator(
          [&row](const std::string& text) -> std::string {
            auto value = ParseDuration(text);
            if (!value) return DurationProblem(text);
            return row.duration_problem ? row.duration_problem(*value) : "";
          },
          "DURATION"));
      break;
  }
  option->default_str(row.show(RunOptions{}));
}

}  // namespace

Command AddRunCommand(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  auto* sub = app.add_subcommand(
      "run", "Run scenarios by name; 'all' runs the post's six, 'everything' runs every scenario");
  sub->add_option("scenarios", args->names,
                  "Scenario names (see dedupsim list), or all, everything; none with --file")
      ->type_name("SCENARIO|all|everything");
  sub->add_option("--file", args->files,
                  "Run a lesson written in a scenario file (TOML, see docs/files.md), or every "
                  "*.toml in a folder; may be given more than once")
      ->type_name("FILE|DIR")
      ->allow_extra_args(false)
      ->check(CLI::ExistingPath);
  AddFileOption(sub, "--db", args->db,
                "Database file to use and keep (created if missing; only a dedupsim database "
                "is ever reset; one dedupsim process at a time). Default: a temporary file "
                "removed at the end");
  sub->add_option("--format", args->format, "text: the post's lines; json: one JSON object per line")
      ->check(CLI::IsMember({"text", "json"}));
  const std::span<const LessonOption> lesson_options = LessonOptions();
  // --quantity to --stagger-ms, then --check to --synchronous, then the rest of the table:
  // the order --help has always shown.
  const size_t first_part = 4;
  for (const LessonOption& option : lesson_options.first(first_part)) {
    AddLessonOption(sub, option, args->options);
  }
  // Hidden (no group): lets the end-to-end tests see --check fail and exit 1.
  AddDecimal(sub, "--test-only-expect-hold-ms", args->test_only_expect_hold_ms, "", 0, 60000)
      ->group("");
  sub->add_flag("--check", args->check,
                "Compare each outcome with what the post says it must be; exit 1 on a difference");
  sub->add_flag("--trace", args->trace,
                "Show every step of every instance (stderr; in the JSON object with --format json)");
  sub->add_option("--journal", args->journal, "SQLite journal mode (default wal)")
      ->check(CLI::IsMember({"wal", "delete"}));
  sub->add_option("--synchronous", args->synchronous, "SQLite synchronous level (default normal)")
      ->check(CLI::IsMember({"normal", "full"}));
  for (const LessonOption& option : lesson_options.subspan(first_part)) {
    AddLessonOption(sub, option, args->options);
  }
  sub->add_option("--diagram", args->diagram,
                  "Print a Mermaid sequence diagram of each run after its line (in JSON: a "
                  "\"diagram\" field); the only kind is mermaid")
      ->check(CLI::IsMember({"mermaid"}));
  AddFileOption(sub, "--timeline", args->timeline,
                "Write an SVG timeline of the run to this .svg file (several scenarios: "
                "stacked sections of one file), replacing a regular file whole and keeping its "
                "mode; never a symbolic link, the database or any file the run uses")
      ->type_name("FILE.svg");
  AddFileOption(sub, "--html", args->html,
                "Write a step-through page of the run to this file: the steps, and the "
                "tables as they were after each one (self-contained HTML; keys, slider, a "
                "link per step); never a file the run uses")
      ->type_name("FILE.html");
  AddDecimal(sub, "--seed", args->seed,
             "Repeatable ids and timestamps: messages, orders and books get the same ids, "
             "and the records the same times (from 2030-01-07T09:00:00Z, a millisecond a "
             "reading), in every picture and page, on every run with the same seed",
             int64_t{0}, int64_t{1} << 53);
  const BackendOptions backend = AddBackendOptions(sub, args->backend, args->dsn, args->pg_schema,
                                                   "run on", "a file", "may reset");
  CLI::Option* pg_schema = backend.schema;
  AddBrokerOptions(sub, args->broker, args->broker_url,
                   "the lessons' messages go through");
  auto* isolation =
      sub->add_option("--isolation", args->isolation,
                      "postgres: the consumers' isolation level: read-committed "
                      "(default), repeatable-read, serializable")
          ->check(CLI::IsMember({"read-committed", "repeatable-read", "serializable"}));
  auto* db = sub->get_option("--db");
  auto* journal = sub->get_option("--journal");
  auto* synchronous = sub->get_option("--synchronous");
  auto* color = sub->add_option("--color", args->color,
                                "Color the tag and figures: auto (on a terminal, unless NO_COLOR "
                                "is set), always, never. JSON is never colored")
                    ->check(CLI::IsMember({"auto", "always", "never"}));
  CLI::App* root = &app;
  return {sub,
          [args, sub, color, root, isolation, db, journal, synchronous, pg_schema]() -> int {
            args->given_db = db->count() > 0;
            args->given_pg_schema = pg_schema->count() > 0;
            args->given_journal = journal->count() > 0 || synchronous->count() > 0;
            args->given_isolation = isolation->count() > 0;
            for (const LessonOption& option : LessonOptions()) {
              if (sub->get_option(std::string(option.flag))->count() > 0) {
                args->given.emplace_back(option.flag);
                if (option.flag == "--dedup-window") {
                  args->dedup_window_text =
                      sub->get_option(std::string(option.flag))->as<std::string>();
                }
              }
            }
            // --color given to run wins over the global one.
            if (color->count() == 0) {
              if (const CLI::Option* global = root->get_option_no_throw("--color"); global && global->count() > 0) {
                args->color = global->as<std::string>();
              }
            }
            return Run(*args);
          }};
}

}  // namespace dedupsim::cli
