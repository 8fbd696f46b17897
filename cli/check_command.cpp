// dedupsim check FILE|DIR...: reads each consumer file, grades it in the explorer's class
// world and prints its row and counterexamples. One file is graded here, in this process;
// several (or a folder) are graded each in a child process of its own, as many at once as
// --jobs says (check_batch.h), and a summary table ends the output. Exit 0 when every file
// passes, 1 when one fails, 5 when none fails but one was not searched exhaustively (the
// budget ran out), 2 for a bad option or a file that could not be graded (its error is a
// row of the summary, FILE:LINE:COLUMN).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/databases.h"
#include "check_batch.h"
#include "commands.h"
#include "core/duration.h"
#include "core/input_error.h"
#include "exit_status.h"
#include "explore/explorer.h"
#include "explore/faults.h"
#include "explore/report.h"
#include "files/consumer_file.h"
#include "files/file_database.h"
#include "files/file_strategy.h"
#include "files/grade.h"
#include "options.h"
#include "outputs.h"
#include "os/atomic_file.h"
#include "progress.h"
#include "views/html_steps.h"
#include "views/mermaid.h"
#include "views/svg_timeline.h"

namespace dedupsim::cli {

namespace {

struct CheckArgs {
  std::vector<std::string> inputs;  // files and folders
  std::vector<std::string> faults;
  std::vector<std::string> expect;
  std::string format = "text";
  bool trace = false;
  std::string diagram;
  std::string timeline;  // SVG file of the counterexamples, or ""
  std::string html;      // step-through page of the counterexamples, or ""
  uint64_t seed = 1;
  std::string budget = "10s";
  uint64_t jobs = 0;    // 0: one per CPU this process may use
  std::string backend = "sqlite";
  std::string dsn;  // postgres: a server the user runs; "": a throwaway one for the command
  std::string pg_template;  // hidden: a batch's child is told what each file's database copies
  bool worker = false;  // hidden: grade one file for a batch, print one JSON line
};

// What the options name, checked before anything runs.
struct Parsed {
  std::vector<const explore::Fault*> faults;
  std::vector<files::Expectation> expectations;
  files::GradeBudget budget;
};

std::optional<Parsed> ParseOptions(const CheckArgs& args) {
  using namespace dedupsim::explore;
  Parsed p;
  for (const std::string& name : args.faults) {
    const Fault* f = FindFault(name, GradedFaults());
    if (f == nullptr) {
      fmt::print(stderr, "dedupsim: unknown fault '{}' (valid: {})\n", name,
                 FaultNames(GradedFaults()));
      return std::nullopt;
    }
    p.faults.push_back(f);
  }
  if (p.faults.empty()) p.faults.assign(GradedFaults().begin(), GradedFaults().end());
  for (const std::string& e : args.expect) {
    size_t eq = e.find('=');
    const Fault* f =
        eq == std::string::npos ? nullptr : FindFault(e.substr(0, eq), GradedFaults());
    std::optional<files::CellExpectation> v =
        eq == std::string::npos ? std::nullopt : files::ParseCellExpectation(e.substr(eq + 1));
    if (f == nullptr || !v) {
      fmt::print(stderr,
                 "dedupsim: --expect '{}': expected FAULT=VERDICT, a fault of {} and a "
                 "verdict of {}\n",
                 e, FaultNames(GradedFaults()), files::CellExpectationNames());
      return std::nullopt;
    }
    p.expectations.push_back({f, *v});
  }
  if (args.budget != "none") {
    std::optional<std::chrono::milliseconds> d = ParseDuration(args.budget);
    if (!d || *d < std::chrono::seconds{1}) {
      fmt::print(stderr,
                 "dedupsim: --budget {}: expected a duration of at least 1s, like 10s or 2m, "
                 "or none (every schedule, however long it takes)\n",
                 args.budget);
      return std::nullopt;
    }
    p.budget.seconds = *d;
  }
  p.budget.seed = args.seed;
  p.budget.since = std::chrono::steady_clock::now();  // reading the file counts
  return p;
}

// The server the files are graded on (backends/databases.h's OpenFileDatabases): none on SQLite.
DatabaseChoice ServerChoice(const CheckArgs& args) {
  DatabaseChoice choice;
  choice.backend = args.backend;
  choice.dsn = args.dsn;
  return choice;
}

// The explorer for one file: its own temporary database (on PostgreSQL: the file's own
// database, pg), the class world.
explore::ExploreOptions GradingOptions(const CheckArgs& args, const FileDatabase* pg) {
  explore::ExploreOptions options;
  if (pg != nullptr) {
    options.postgres = &pg->schema();
    options.isolation = Isolation::kReadCommitted;  // PostgreSQL's default, as a service runs
  }
  options.seed = args.seed;
  options.graded = true;  // the class world: see docs/check.md
  // Long files: the budget, not a step count, ends a search (a run still ends at a million).
  options.max_steps = 1'000'000;
  return options;
}

// The file's steps, from a first clean delivery, within the budget: "" when learnt, else
// why not (a statement that never ends).
std::string LearnSteps(explore::Explorer& explorer, files::FileStrategy& consumer,
                       const files::GradeBudget& budget) {
  if (budget.seconds.count() > 0) {
    explorer.scheduler().StopAt(std::chrono::steady_clock::now() +
                                std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    budget.seconds));
  }
  try {
    consumer.LearnCrashPoints(explorer);
  } catch (const explore::OutOfTime&) {
    explorer.scheduler().StopAt(std::nullopt);
    return fmt::format(
        "its first delivery did not end within the budget ({}): a statement ran on until it "
        "was stopped, so no delivery could ever end",
        FormatDuration(std::chrono::duration_cast<std::chrono::milliseconds>(budget.seconds)));
  }
  explorer.scheduler().StopAt(std::nullopt);
  return "";
}

// One file, in this process: the row, the counterexamples, the pictures.
// --diagram mermaid: each failing cell's shortest schedule as a sequence diagram, each
// after a blank line.
std::string CounterexampleDiagrams(const files::Grade& grade) {
  std::string out;
  for (const files::GradedCell& g : grade.cells) {
    if (!g.replay) continue;
    MermaidOptions mermaid;
    mermaid.timings = false;
    mermaid.ids_as_text = true;  // the ids of the text above it
    mermaid.title = fmt::format("{} under {}: {}", grade.strategy->name, g.cell.fault->name,
                                g.shown()->variant);
    out += "\n" + MermaidDiagram(g.events, mermaid);
  }
  return out;
}

// The file read, and on PostgreSQL (server: null for SQLite) set up in a database and role
// of its own (files/file_database.h), dropped when *pg goes.
std::unique_ptr<files::FileStrategy> LoadForGrading(const std::string& path,
                                                    const FileDatabases* server,
                                                    std::unique_ptr<FileDatabase>* pg) {
  files::ConsumerFile file = files::LoadConsumerFile(path);
  if (server != nullptr) *pg = files::SetUpFileDatabase(*server, file);
  auto consumer = std::make_unique<files::FileStrategy>(std::move(file));
  if (*pg) consumer->SetPostgresReset((*pg)->reset());
  return consumer;
}

int GradeOne(const CheckArgs& args, const Parsed& parsed, const FileDatabases* server) {
  using namespace dedupsim::explore;
  const std::string& path = args.inputs[0];
  std::unique_ptr<FileDatabase> pg;
  std::unique_ptr<files::FileStrategy> consumer;
  try {
    consumer = LoadForGrading(path, server, &pg);
  } catch (const files::FileError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return kExitUsage;
  }
  // An output over a consumer file would replace the student's file with a picture
  // (cli/outputs.h: the one rule for every output).
  std::vector<OutputFile> outputs;
  if (!args.timeline.empty()) outputs.push_back({"--timeline", args.timeline});
  if (!args.html.empty()) outputs.push_back({"--html", args.html});
  std::vector<UsedFile> used;
  for (const std::string& input : args.inputs) {
    used.push_back({input, fmt::format("the consumer file {}", input)});
  }
  if (auto misfit = OutputMisfit(outputs, used)) {
    fmt::print(stderr, "dedupsim: {}\n", *misfit);
    return kExitUsage;
  }
  std::optional<AtomicFile> timeline, html;
  if (int status = OpenPictureFiles(args.timeline, args.html, &timeline, &html); status != 0) {
    return status;
  }
  std::vector<TimelineSection> sections;
  std::vector<HtmlSection> pages;

  const Strategy* extra[] = {&consumer->strategy()};
  ExploreOptions options = GradingOptions(args, pg.get());
  // Progress on a terminal (stderr) while the cells run; none for JSON.
  TerminalProgress view(args.format != "json");
  options.progress = [&view](const ExploreProgress& p) { view.Show(p.done, p.schedules); };
  Explorer explorer(options, extra);
  explorer.ExpectCells(static_cast<int64_t>(parsed.faults.size()));
  view.Start("check: cells", static_cast<int64_t>(parsed.faults.size()), "schedules");
  if (std::string why = LearnSteps(explorer, *consumer, parsed.budget); !why.empty()) {
    view.Clear();
    fmt::print(stderr, "{}: not graded: {}\n", path, why);
    return kExitUsage;
  }
  files::Grade grade = files::GradeStrategy(explorer, consumer->strategy(), parsed.faults,
                                            parsed.expectations, html.has_value(), parsed.budget);
  view.Clear();  // the grade's lines go where the progress line was
  grade.file = path;
  grade.untaken = consumer->UntakenBranches();
  for (const files::GradedCell& g : grade.cells) {
    if (!g.replay) continue;
    sections.push_back(
        {.scenario = fmt::format("{} under {}", grade.strategy->name, g.cell.fault->name),
         .line = fmt::format("shortest failing schedule: {} steps{}, ends {}",
                             g.replay->picks.size(),
                             g.shown()->variant.empty() ? "" : ", " + g.shown()->variant,
                             ToString(g.replay->outcome)),
         .events = g.events});
    if (html) {
      pages.push_back(
          {.scenario = fmt::format("{} under {}", grade.strategy->name, g.cell.fault->name),
           .line = fmt::format("{}; final: {}", CounterexampleHeadline(g.cell, *g.replay),
                               FormatFigures(g.replay->figures)),
           .events = g.events,
           .snapshots = g.tables,
           .backend = args.backend,
           .ids_as_text = true});
    }
  }
  if (args.format == "json") {
    fmt::print("{}\n", nlohmann::ordered_json{{"command", "check"},
                                              {"backend", args.backend},
                                              {"seed", args.seed},
                                              {"passed", grade.Passed() && grade.Exhaustive()},
                                              {"consumers", {files::GradeToJson(grade)}}}
                           .dump(2));
  } else {
    fmt::print("{}", files::FormatGrade(grade, args.trace));
    if (args.diagram == "mermaid") fmt::print("{}", CounterexampleDiagrams(grade));
  }
  std::fflush(stdout);
  if (html && pages.empty()) {
    fmt::print(stderr, "dedupsim: no failing schedule to step through; {} not written\n",
               html->path());
  } else if (!CommitOutputFile(&html, [&] { return StepThroughPage(pages); })) {
    return kExitCannotWrite;
  }
  if (!CommitOutputFile(&timeline, [&] { return SvgTimeline(sections); })) return kExitCannotWrite;
  if (!grade.Passed()) return kExitCheckFailed;
  return grade.Exhaustive() ? kExitOk : kExitNotExhaustive;
}

// For a batch: one file graded, one JSON line on stdout (check_batch.h reads it).
// A file's fault found while it is loaded or runs (FILE:LINE:COLUMN: a statement past the
// sandbox's budget, refused when it ran) is its row; so is anything else that stops it.
int GradeForBatch(const CheckArgs& args, const Parsed& parsed);
int GradeForBatchOrError(const CheckArgs& args, const Parsed& parsed) {
  const std::string& path = args.inputs[0];
  try {
    return GradeForBatch(args, parsed);
  } catch (const InputError& e) {
    fmt::print("{}\n", FileErrorLine(path, e.what()).dump());
  } catch (const std::exception& e) {
    fmt::print("{}\n", FileErrorLine(path, fmt::format("{}: not graded: {}", path, e.what())).dump());
  }
  return kExitOk;
}

int GradeForBatch(const CheckArgs& args, const Parsed& parsed) {
  const std::string& path = args.inputs[0];
  std::unique_ptr<FileDatabase> pg;
  std::unique_ptr<FileDatabases> server =
      AdoptFileDatabases(ServerChoice(args), args.pg_template);
  auto consumer = LoadForGrading(path, server.get(), &pg);
  const explore::Strategy* extra[] = {&consumer->strategy()};
  explore::Explorer explorer(GradingOptions(args, pg.get()), extra);
  if (std::string why = LearnSteps(explorer, *consumer, parsed.budget); !why.empty()) {
    fmt::print("{}\n", FileErrorLine(path, fmt::format("{}: not graded: {}", path, why)).dump());
    return kExitOk;
  }
  files::Grade grade = files::GradeStrategy(explorer, consumer->strategy(), parsed.faults,
                                            parsed.expectations, false, parsed.budget);
  grade.file = path;
  grade.untaken = consumer->UntakenBranches();
  std::string text = files::FormatGrade(grade, args.trace);
  if (args.diagram == "mermaid") text += CounterexampleDiagrams(grade);
  fmt::print("{}\n", nlohmann::ordered_json{{"grade", files::GradeToJson(grade)}, {"text", text}}
                         .dump());
  return kExitOk;
}

int Run(const CheckArgs& args) {
  std::optional<Parsed> parsed = ParseOptions(args);
  if (!parsed) return kExitUsage;
  const bool postgres = args.backend == "postgres";
  if (!postgres && !args.dsn.empty()) {
    fmt::print(stderr, "dedupsim: --dsn needs --backend postgres\n");
    return kExitUsage;
  }
  if (args.worker) {
    if (args.inputs.size() != 1 || (postgres && (args.dsn.empty() || args.pg_template.empty()))) {
      fmt::print(stderr, "dedupsim: check --worker grades one file (on postgres: on --dsn)\n");
      return kExitUsage;
    }
    return GradeForBatchOrError(args, *parsed);
  }
  std::optional<std::vector<std::string>> files = ConsumerFilesOf(args.inputs);
  if (!files) return kExitUsage;
  // PostgreSQL: one server for the whole command (a throwaway one unless --dsn names one);
  // each file gets a database and a role of its own on it. No server programs or libpq: one
  // line, exit 3 (DatabaseError, cli/main.cpp).
  std::unique_ptr<FileDatabases> server =
      OpenFileDatabases(ServerChoice(args));
  if (args.inputs.size() == 1 && files->size() == 1 && (*files)[0] == args.inputs[0]) {
    return GradeOne(args, *parsed, server.get());
  }
  // A class: each file alone, in a child of its own.
  for (const auto& [option, value] :
       {std::pair{"--html", &args.html}, std::pair{"--timeline", &args.timeline}}) {
    if (!value->empty()) {
      fmt::print(stderr,
                 "dedupsim: {} draws the counterexamples of one file; give one file, not {}\n",
                 option, args.inputs.size() == 1 ? "a folder" : "several");
      return kExitUsage;
    }
  }
  BatchOptions batch;
  batch.files = *files;
  batch.jobs = static_cast<int>(args.jobs);
  batch.json = args.format == "json";
  batch.budget = parsed->budget.seconds;
  batch.seed = args.seed;
  // What each child is told: the options that shape a grade.
  for (const std::string& f : args.faults) batch.child_args.insert(batch.child_args.end(), {"--fault", f});
  for (const std::string& e : args.expect) batch.child_args.insert(batch.child_args.end(), {"--expect", e});
  batch.child_args.insert(batch.child_args.end(),
                          {"--seed", std::to_string(args.seed), "--budget", args.budget});
  if (args.trace) batch.child_args.emplace_back("--trace");
  if (postgres) {
    batch.child_args.insert(batch.child_args.end(),
                            {"--backend", "postgres", "--dsn", server->dsn(),
                             "--pg-template", server->template_db()});
  }
  if (!args.diagram.empty()) batch.child_args.insert(batch.child_args.end(), {"--diagram", args.diagram});
  return RunBatch(batch);
}

}  // namespace

Command AddCheckCommand(CLI::App& app) {
  auto args = std::make_shared<CheckArgs>();
  auto* sub = app.add_subcommand(
      "check",
      "Grade consumer files: every crash point, duplicate and interleaving on a real SQLite "
      "file; exit 0 when each message is processed exactly once or flagged, 1 otherwise");
  sub->add_option("files", args->inputs,
                  "Consumer files (.toml; see docs/files.md), or folders: every *.toml in them, "
                  "each graded alone, several at once, then a summary")
      ->type_name("FILE|DIR")
      ->required();
  std::vector<std::string> fault_names;
  for (const explore::Fault* f : explore::GradedFaults()) fault_names.emplace_back(f->name);
  sub->add_option("--fault", args->faults, "Faults to grade against (repeatable; default all)")
      ->check(ListedValues(fault_names));
  sub->add_option(
      "--expect", args->expect,
      "FAULT=VERDICT: grade that fault against this verdict instead of safe "
      "(safe, once, unsafe, twice, lost, reconcile, deadlock, error, any; repeatable; by default "
      "every fault is expected safe except producer-duplicate, shown but not graded)");
  sub->add_option("--format", args->format,
                  "text, or json (for CI and autograders; with several files one object per "
                  "line, then a summary)")
      ->check(CLI::IsMember({"text", "json"}));
  sub->add_flag("--trace", args->trace, "Print the replayed trace under each counterexample");
  sub->add_option("--diagram", args->diagram,
                  "mermaid: a sequence diagram of each counterexample, after the text")
      ->check(CLI::IsMember({"mermaid"}));
  AddFileOption(sub, "--timeline", args->timeline,
                "Write an SVG timeline of every counterexample to this file (.svg; one file only)");
  AddFileOption(sub, "--html", args->html,
                "Write a step-through page of every counterexample to this file: its steps, "
                "and the tables as they were after each one (self-contained HTML; one file only)")
      ->type_name("FILE.html");
  AddDecimal(sub, "--seed", args->seed,
             "Seed for the message, order and book ids and the sampled schedules (default 1; 0 "
             "to 2^64-1)",
             uint64_t{0}, UINT64_MAX);
  sub->add_option("--budget", args->budget,
                  "Time for one file: past it, the schedules left are sampled at random (seeded) "
                  "and the verdict says it was not exhaustive (a duration like 10s or 2m, or "
                  "none; default 10s)")
      ->type_name("DURATION");
  AddDecimal(sub, "--jobs", args->jobs,
             "Files graded at once (default 0: one per CPU this process may use)", uint64_t{0},
             uint64_t{64});
  sub->add_option("--backend", args->backend,
                  "Database to grade on: sqlite (a temporary file per file, default) or postgres "
                  "(a private throwaway server for the command, or the one --dsn names; each "
                  "file in a database and role of its own there, see docs/check.md)")
      ->check(CLI::IsMember({"sqlite", "postgres"}));
  sub->add_option("--dsn", args->dsn,
                  "postgres: a libpq connection string (\"host=... user=...\", keywords, not "
                  "a URI) of a server you run, as a role that may create databases and roles; "
                  "check creates and drops a database and a role per file there");
  sub->add_flag("--worker", args->worker)->group("");  // a batch's child
  sub->add_option("--pg-template", args->pg_template)->group("");  // a batch's child
  return {sub, [args]() -> int { return Run(*args); }};
}

}  // namespace dedupsim::cli
