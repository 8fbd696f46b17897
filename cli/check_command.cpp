// dedupsim check FILE...: reads each consumer file, grades it in the explorer and prints
// its row and counterexamples. Exit 0 when every cell is as expected (safe unless
// --expect says otherwise), 1 when one is not, 2 for a bad file or option.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "exit_status.h"
#include "explore/explorer.h"
#include "explore/faults.h"
#include "explore/report.h"
#include "files/consumer_file.h"
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
  std::vector<std::string> files;
  std::vector<std::string> faults;
  std::vector<std::string> expect;
  std::string format = "text";
  bool trace = false;
  std::string diagram;
  std::string timeline;  // SVG file of the counterexamples, or ""
  std::string html;      // step-through page of the counterexamples, or ""
  uint64_t seed = 1;
};

int Run(const CheckArgs& args) {
  using namespace dedupsim::explore;
  std::vector<const Fault*> faults;
  for (const std::string& name : args.faults) {
    const Fault* f = FindFault(name);
    if (f == nullptr) {
      fmt::print(stderr, "dedupsim: unknown fault '{}' (valid: {})\n", name, FaultNames());
      return kExitUsage;
    }
    faults.push_back(f);
  }
  if (faults.empty()) faults.assign(AllFaults().begin(), AllFaults().end());
  std::vector<files::Expectation> expectations;
  for (const std::string& e : args.expect) {
    size_t eq = e.find('=');
    const Fault* f = eq == std::string::npos ? nullptr : FindFault(e.substr(0, eq));
    std::optional<files::Verdict> v =
        eq == std::string::npos ? std::nullopt : files::ParseVerdict(e.substr(eq + 1));
    if (f == nullptr || !v) {
      fmt::print(stderr,
                 "dedupsim: --expect '{}': expected FAULT=VERDICT, a fault of {} and a "
                 "verdict of {}\n",
                 e, FaultNames(), files::VerdictNames());
      return kExitUsage;
    }
    expectations.push_back({f, *v});
  }

  std::vector<std::unique_ptr<files::FileStrategy>> consumers;
  bool bad = false;
  for (const std::string& path : args.files) {
    try {
      consumers.push_back(std::make_unique<files::FileStrategy>(files::LoadConsumerFile(path)));
    } catch (const files::FileError& e) {
      fmt::print(stderr, "{}\n", e.what());
      bad = true;
    }
  }
  if (bad) return kExitUsage;
  // An output over a consumer file would replace the student's file with a picture
  // (cli/outputs.h: the one rule for every output).
  std::vector<OutputFile> outputs;
  if (!args.timeline.empty()) outputs.push_back({"--timeline", args.timeline});
  if (!args.html.empty()) outputs.push_back({"--html", args.html});
  std::vector<UsedFile> used;
  for (const std::string& path : args.files) {
    used.push_back({path, fmt::format("the consumer file {}", path)});
  }
  if (auto misfit = OutputMisfit(outputs, used)) {
    fmt::print(stderr, "dedupsim: {}\n", *misfit);
    return kExitUsage;
  }

  // Created (as a temporary) before anything runs: a path that cannot be written costs no
  // run and leaves nothing behind.
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
  std::vector<TimelineSection> sections;
  std::vector<HtmlSection> pages;

  std::vector<const Strategy*> extra;
  for (const auto& c : consumers) extra.push_back(&c->strategy());
  ExploreOptions options;
  options.seed = args.seed;
  // Progress on a terminal (stderr) while the cells run; none for JSON.
  TerminalProgress view(args.format != "json");
  options.progress = [&view](const ExploreProgress& p) { view.Show(p.done, p.schedules); };
  Explorer explorer(options, extra);
  explorer.ExpectCells(static_cast<int64_t>(consumers.size() * faults.size()));
  view.Start("check: cells", static_cast<int64_t>(consumers.size() * faults.size()), "schedules");
  bool passed = true;
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (size_t i = 0; i < consumers.size(); ++i) {
    consumers[i]->LearnCrashPoints(explorer);
    files::Grade grade = files::GradeStrategy(explorer, consumers[i]->strategy(), faults,
                                              expectations, html.has_value());
    view.Clear();  // the grade's lines go where the progress line was
    grade.file = args.files[i];
    for (const files::GradedCell& g : grade.cells) {
      if (!g.replay) continue;
      sections.push_back(
          {.scenario = fmt::format("{} under {}", grade.strategy->name, g.cell.fault->name),
           .line = fmt::format("shortest failing schedule: {} steps{}, ends {}",
                               g.replay->picks.size(),
                               g.cell.shortest->variant.empty() ? "" : ", " + g.cell.shortest->variant,
                               ToString(g.replay->outcome)),
           .events = g.events});
      if (html) {
        pages.push_back(
            {.scenario = fmt::format("{} under {}", grade.strategy->name, g.cell.fault->name),
             .line = fmt::format("{}; final: {}", CounterexampleHeadline(g.cell, *g.replay),
                                 FormatFigures(g.replay->figures)),
             .events = g.events,
             .snapshots = g.tables});
      }
    }
    passed = passed && grade.Passed();
    if (args.format == "json") {
      all.push_back(files::GradeToJson(grade));
    } else {
      if (i > 0) fmt::print("\n");
      fmt::print("{}", files::FormatGrade(grade, args.trace));
      if (args.diagram == "mermaid") {
        for (const files::GradedCell& g : grade.cells) {
          if (!g.replay) continue;
          MermaidOptions mermaid;
          mermaid.timings = false;
          mermaid.title = fmt::format("{} under {}: {}", grade.strategy->name, g.cell.fault->name,
                                      g.cell.shortest->variant);
          fmt::print("\n{}", MermaidDiagram(g.events, mermaid));
        }
      }
    }
  }
  if (args.format == "json") {
    fmt::print(
        "{}\n",
        nlohmann::ordered_json{
            {"command", "check"}, {"seed", args.seed}, {"passed", passed}, {"consumers", all}}
            .dump(2));
  }
  std::fflush(stdout);
  if (html && pages.empty()) {
    fmt::print(stderr, "dedupsim: no failing schedule to step through; {} not written\n",
               html->path());
  } else if (!CommitOutputFile(&html, [&] { return StepThroughPage(pages); })) {
    return kExitCannotWrite;
  }
  if (!CommitOutputFile(&timeline, [&] { return SvgTimeline(sections); })) return kExitCannotWrite;
  return passed ? kExitOk : kExitCheckFailed;
}

}  // namespace

Command AddCheckCommand(CLI::App& app) {
  auto args = std::make_shared<CheckArgs>();
  auto* sub = app.add_subcommand(
      "check",
      "Grade consumer files: every crash point, duplicate and interleaving on a real SQLite "
      "file; exit 0 when each message is processed exactly once or flagged, 1 otherwise");
  sub->add_option("files", args->files, "Consumer files (.toml; see docs/files.md)")
      ->type_name("FILE")
      ->required();
  std::vector<std::string> fault_names;
  for (const explore::Fault* f : explore::AllFaults()) fault_names.emplace_back(f->name);
  sub->add_option("--fault", args->faults, "Faults to grade against (repeatable; default all)")
      ->check(ListedValues(fault_names));
  sub->add_option(
      "--expect", args->expect,
      "FAULT=VERDICT: grade that fault against this verdict instead of safe "
      "(safe, once, unsafe, twice, lost, reconcile, deadlock, error, any; repeatable; by default "
      "every fault is expected safe except producer-duplicate, shown but not graded)");
  sub->add_option("--format", args->format, "text, or json (for CI and autograders)")
      ->check(CLI::IsMember({"text", "json"}));
  sub->add_flag("--trace", args->trace, "Print the replayed trace under each counterexample");
  sub->add_option("--diagram", args->diagram,
                  "mermaid: a sequence diagram of each counterexample, after the text")
      ->check(CLI::IsMember({"mermaid"}));
  AddFileOption(sub, "--timeline", args->timeline,
                "Write an SVG timeline of every counterexample to this file (.svg)");
  AddFileOption(sub, "--html", args->html,
                "Write a step-through page of every counterexample to this file: its steps, "
                "and the tables as they were after each one (self-contained HTML)")
      ->type_name("FILE.html");
  AddDecimal(sub, "--seed", args->seed,
             "Seed for the message, order and book ids (default 1; 0 to 2^64-1)", uint64_t{0},
             UINT64_MAX);
  return {sub, [args]() -> int { return Run(*args); }};
}

}  // namespace dedupsim::cli
