// dedupsim explore: parses the options, asks lib/explore for the matrix, a counterexample
// or the seeded runs, and prints the view. Exit 1 when --expect-safe names a strategy that
// broke an invariant somewhere; 2 for an unknown strategy or fault.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "exit_status.h"
#include "explore/explorer.h"
#include "explore/faults.h"
#include "explore/random_mode.h"
#include "explore/report.h"
#include "explore/strategies.h"
#include "lesson/databases.h"
#include "options.h"
#include "outputs.h"
#include "os/atomic_file.h"
#include "progress.h"
#include "views/html_steps.h"

namespace dedupsim::cli {

namespace {

using namespace dedupsim::explore;

struct ExploreArgs {
  std::vector<std::string> strategies;
  std::vector<std::string> faults;
  std::vector<std::string> expect_safe;
  std::string format = "text";
  std::string journal = "wal";
  bool counterexample = false;
  bool list = false;
  uint64_t seed = 1;
  int64_t runs = 0;
  int64_t replay = -1;
  bool no_reduction = false;
  int instances = 2;
  int deliveries = 0;  // 0: as many as instances
  std::string backend = "sqlite";
  std::string dsn;  // postgres: a server the user runs; "": a throwaway cluster
  std::string pg_schema = "dedupsim";
  bool given_pg_schema = false;
  std::string isolation = "read-committed";
  bool given_journal = false;
  bool given_isolation = false;
  std::string html;  // --counterexample's step-through page, or ""
};

// The rows that run through the store seam, and so on PostgreSQL too.
std::vector<const Strategy*> StoreStrategies() {
  std::vector<const Strategy*> out;
  for (const Strategy* s : AllStrategies()) {
    if (s->RunsOnPostgres()) out.push_back(s);
  }
  return out;
}

int Usage(const std::string& message) {
  fmt::print(stderr, "dedupsim: {}\n", message);
  return kExitUsage;
}

// Resolves names against a table; on an unknown name prints the valid ones and fails.
template <typename T, typename Find>
bool Resolve(const std::vector<std::string>& names, const char* what, Find find,
             const std::string& valid, std::vector<const T*>& out) {
  for (const std::string& name : names) {
    const T* item = find(name);
    if (item == nullptr) {
      fmt::print(stderr, "dedupsim: unknown {} '{}' (valid: {})\n", what, name, valid);
      return false;
    }
    if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
  }
  return true;
}

void PrintList() {
  fmt::print("strategies:\n");
  for (const Strategy* s : AllStrategies()) fmt::print("  {:<20} {}\n", s->name, s->summary);
  fmt::print("faults:\n");
  for (const Fault* f : AllFaults()) fmt::print("  {:<20} {}\n", f->name, f->summary);
}

// Prints which of the named strategies broke an invariant; true when all held.
bool CheckExpectSafe(const std::vector<const Strategy*>& expected, const MatrixResult& m) {
  bool all = true;
  for (const Strategy* s : expected) {
    for (size_t r = 0; r < m.strategies.size(); ++r) {
      if (m.strategies[r] != s) continue;
      for (size_t c = 0; c < m.faults.size(); ++c) {
        const CellResult& cell = m.Cell(r, c);
        if (!cell.Safe()) {
          fmt::print(stderr, "dedupsim: expected {} to be safe, but under {}: {} of {} schedules\n",
                     s->name, cell.fault->name, CellLabel(cell), cell.schedules);
          all = false;
        }
      }
    }
  }
  return all;
}

int RunCounterexample(Explorer& explorer, const Strategy& strategy,
                      const std::vector<const Fault*>& faults, bool json, TerminalProgress& view,
                      std::optional<AtomicFile>& html) {
  const char* backend = explorer.options().postgres != nullptr ? " --backend postgres" : "";
  std::vector<CellResult> cells;
  int64_t schedules = 0;
  for (const Fault* f : faults) {
    cells.push_back(explorer.ExploreCell(strategy, *f));
    schedules += cells.back().schedules;
  }
  view.Clear();
  std::optional<size_t> best = ShortestFailingCell(cells);
  if (!best) {
    if (json) {
      fmt::print("{}\n", nlohmann::ordered_json{{"strategy", strategy.name},
                                                {"schedules", schedules},
                                                {"counterexample", nullptr}}
                             .dump(2));
    } else {
      fmt::print("{}: no failing schedule; every one of the {} schedules ended once\n",
                 strategy.name, schedules);
    }
    if (html) {
      fmt::print(stderr, "dedupsim: no failing schedule to step through; {} not written\n",
                 html->path());
    }
    return kExitOk;
  }
  Recorder recorder;
  std::vector<TablesSnapshot> tables;
  ScheduleResult replay =
      explorer.ReplayShortest(cells[*best], &recorder, html ? &tables : nullptr);
  const CellResult& cell = cells[*best];
  if (!CommitOutputFile(&html, [&] {
        return StepThroughPage(
            {{.scenario = fmt::format("{} under {}", strategy.name, cell.fault->name),
              .line = fmt::format("{}; final: {}", CounterexampleHeadline(cell, replay),
                                  FormatFigures(replay.figures)),
              .events = recorder.Events(),
              .snapshots = tables,
              .backend = explorer.options().postgres != nullptr ? "postgres" : "sqlite"}});
      })) {
    return kExitCannotWrite;
  }
  if (json) {
    fmt::print("{}\n", CounterexampleToJson(cells[*best], replay).dump(2));
  } else {
    fmt::print("{}", FormatCounterexample(cells[*best], replay, recorder.Events(),
                                          explorer.options().seed, backend));
  }
  return kExitOk;
}

int Run(const ExploreArgs& args) {
  if (args.list) {
    PrintList();
    return kExitOk;
  }
  std::vector<const Strategy*> strategies;
  std::vector<const Fault*> faults;
  std::vector<const Strategy*> expect_safe;
  auto find_strategy = [](const std::string& n) { return FindStrategy(n); };
  auto find_fault = [](const std::string& n) { return FindFault(n); };
  if (!Resolve<Strategy>(args.strategies, "strategy", find_strategy, StrategyNames(), strategies) ||
      !Resolve<Fault>(args.faults, "fault", find_fault, FaultNames(), faults) ||
      !Resolve<Strategy>(args.expect_safe, "strategy", find_strategy, StrategyNames(),
                         expect_safe)) {
    return kExitUsage;
  }
  const bool postgres = args.backend == "postgres";
  if (!postgres && (!args.dsn.empty() || args.given_isolation || args.given_pg_schema)) {
    return Usage("--dsn, --pg-schema and --isolation need --backend postgres");
  }
  if (postgres) {
    if (args.given_journal) return Usage("--journal is SQLite's; not with --backend postgres");
    if (args.runs > 0 || args.replay >= 0) {
      return Usage("--runs and --replay do not run on --backend postgres yet");
    }
    std::vector<const Strategy*> store = StoreStrategies();
    if (strategies.empty()) strategies = store;
    std::string missing;
    for (const Strategy* s : strategies) {
      const Strategy* partner = FindStrategy(s->partner);
      for (const Strategy* needed : {s, partner}) {
        if (needed != nullptr && !needed->RunsOnPostgres()) {
          missing += (missing.empty() ? "" : ", ") + std::string(needed->name);
        }
      }
    }
    if (!missing.empty()) {
      std::string valid;
      for (const Strategy* s : store) valid += (valid.empty() ? "" : ", ") + std::string(s->name);
      return Usage(
          fmt::format("not on --backend postgres yet: {} (these are: {})", missing, valid));
    }
  }
  if (strategies.empty()) strategies.assign(AllStrategies().begin(), AllStrategies().end());
  if (faults.empty()) faults.assign(AllFaults().begin(), AllFaults().end());
  for (const Strategy* s : expect_safe) {
    if (std::find(strategies.begin(), strategies.end(), s) == strategies.end())
      strategies.push_back(s);
  }
  const bool json = args.format == "json";
  if (!args.html.empty() && !args.counterexample) {
    return Usage("--html steps through a counterexample; it needs --counterexample");
  }

  // The one rule for every output (cli/outputs.h); explore reads no file of the user's.
  if (!args.html.empty()) {
    if (auto misfit = OutputMisfit({{"--html", args.html}}, {})) return Usage(*misfit);
  }
  // Created (as a temporary) before anything runs: a path that cannot be written costs no
  // run and leaves nothing behind.
  std::optional<AtomicFile> html;
  if (!OpenOutputFile(args.html, &html)) return kExitCannotWrite;

  ExploreOptions options;
  options.seed = args.seed;
  options.journal = args.journal == "delete" ? JournalMode::kDelete : JournalMode::kWal;
  options.reduce = !args.no_reduction;
  options.world.instances = args.instances;
  options.world.deliveries = args.deliveries > 0 ? args.deliveries : args.instances;
  if (options.world.deliveries < options.world.instances) {
    return Usage(
        fmt::format("--deliveries {} is fewer than --instances {}: every instance gets a copy",
                    options.world.deliveries, options.world.instances));
  }
  if (options.world != WorldSize{} && (args.runs > 0 || args.replay >= 0)) {
    return Usage(
        "--instances and --deliveries size the concurrent fault; the seeded mode sizes its own "
        "runs");
  }
  // PostgreSQL: one throwaway cluster (or the --dsn server's schema) for the whole command;
  // every schedule starts from the same reset of its tables. The SQLite matrix of the same
  // cells is explored too, to mark where the two differ.
  // On the throwaway cluster the matrix's rows are shared out among a schema per core, each
  // explored by a thread of its own (ExploreOptions::postgres_lanes); a --dsn server gets the
  // one schema named, nothing more.
  std::unique_ptr<ExploreServers> servers;
  if (postgres) {
    // At most 4: a lane holds up to 18 connections (its control, its spare, and for each of
    // up to 8 instances its own and its lock watch's), and the cluster takes 100.
    constexpr size_t kMostLanes = 4;
    const size_t cores = std::max(1u, std::thread::hardware_concurrency());
    servers = OpenExploreServers(
        DatabaseChoice{.backend = "postgres", .dsn = args.dsn, .schema = args.pg_schema},
        std::min({cores, strategies.size(), kMostLanes}));
    options.postgres = &servers->schema();
    options.postgres_lanes = servers->lanes();
    options.isolation = args.isolation == "serializable"      ? Isolation::kSerializable
                        : args.isolation == "repeatable-read" ? Isolation::kRepeatableRead
                                                              : Isolation::kReadCommitted;
  }
  // Progress on a terminal (stderr) while schedules run; none for JSON.
  TerminalProgress view(!json);
  options.progress = [&view](const ExploreProgress& p) { view.Show(p.done, p.schedules); };
  Explorer explorer(options);
  const RandomMix mix = RandomMix::From(args.faults);

  if (args.replay >= 0) {
    if (args.strategies.size() != 1) return Usage("--replay needs exactly one --strategy");
    const Strategy& s = *strategies.front();
    Recorder recorder;
    ScheduleResult r = RunRandom(explorer.scheduler(), s, args.seed, args.replay, mix, &recorder);
    if (json) {
      fmt::print("{}\n", RandomReplayToJson(s, args.seed, args.replay, r).dump(2));
    } else {
      fmt::print("{}", FormatRandomReplay(s, args.seed, args.replay, mix, r, recorder.Events()));
    }
    return kExitOk;
  }

  if (args.runs > 0) {
    if (args.counterexample)
      return Usage("--counterexample explores every schedule; not with --runs");
    view.Start("explore: random runs", args.runs * static_cast<int64_t>(strategies.size()), "runs");
    RandomResult r = ExploreRandom(explorer.scheduler(), strategies, args.seed, args.runs, mix,
                                   [&view](const ExploreProgress& p) { view.Show(p.done); });
    view.Clear();
    if (json) {
      fmt::print("{}\n", RandomToJson(r).dump(2));
    } else {
      fmt::print("{}{}", FormatRandom(r), FormatRandomTiming(r));
    }
    bool all = true;
    for (const RandomRow& row : r.rows) {
      if (std::find(expect_safe.begin(), expect_safe.end(), row.strategy) == expect_safe.end())
        continue;
      for (size_t i = 0; i < kOutcomeCount; ++i) {
        if (row.counts[i] > 0 && BreaksInvariant(OutcomeAt(i))) {
          fmt::print(stderr, "dedupsim: expected {} to be safe, but {} run(s) ended {}\n",
                     row.strategy->name, row.counts[i], ToString(OutcomeAt(i)));
          all = false;
        }
      }
    }
    return all ? kExitOk : kExitCheckFailed;
  }

  if (args.counterexample) {
    if (args.strategies.size() != 1) return Usage("--counterexample needs exactly one --strategy");
    view.Start("explore: cells", static_cast<int64_t>(faults.size()), "schedules");
    explorer.ExpectCells(static_cast<int64_t>(faults.size()));
    return RunCounterexample(explorer, *strategies.front(), faults, json, view, html);
  }

  view.Start("explore: cells", static_cast<int64_t>(strategies.size() * faults.size()),
             "schedules");
  MatrixResult m = explorer.ExploreMatrix(strategies, faults);
  std::optional<MatrixResult> sqlite;
  if (postgres) {
    ExploreOptions on_sqlite = options;
    on_sqlite.postgres = nullptr;
    on_sqlite.postgres_lanes.clear();
    on_sqlite.progress = {};
    Explorer other(on_sqlite);
    sqlite.emplace(other.ExploreMatrix(strategies, faults));
    m.compared = &*sqlite;
  }
  view.Clear();
  if (json) {
    fmt::print("{}\n", MatrixToJson(m).dump(2));
  } else {
    fmt::print("{}{}", FormatMatrix(m), FormatTiming(m));
  }
  std::fflush(stdout);
  return CheckExpectSafe(expect_safe, m) ? kExitOk : kExitCheckFailed;
}

}  // namespace

Command AddExploreCommand(CLI::App& app) {
  auto args = std::make_shared<ExploreArgs>();
  auto* sub = app.add_subcommand(
      "explore",
      "Run every schedule of each strategy under each fault on a real SQLite file and print "
      "the matrix of outcomes");
  std::vector<std::string> strategy_names, fault_names;
  for (const explore::Strategy* s : explore::AllStrategies()) strategy_names.emplace_back(s->name);
  for (const explore::Fault* f : explore::AllFaults()) fault_names.emplace_back(f->name);
  sub->add_option("--strategy", args->strategies,
                  "Rows to explore (repeatable; default all; see --list)")
      ->check(ListedValues(strategy_names));
  sub->add_option("--fault", args->faults, "Columns to explore (repeatable; default all)")
      ->check(ListedValues(fault_names));
  sub->add_option("--format", args->format, "text, or json (the whole matrix with its counts)")
      ->check(CLI::IsMember({"text", "json"}));
  sub->add_flag("--counterexample", args->counterexample,
                "With one --strategy: print the shortest failing schedule (over the faults "
                "given, or all) step by step, and the final figures");
  AddFileOption(sub, "--html", args->html,
                "With --counterexample: write a step-through page of the shortest failing "
                "schedule to this file: its steps, and the tables as they were after each one "
                "(self-contained HTML)")
      ->type_name("FILE.html");
  sub->add_option("--expect-safe", args->expect_safe,
                  "Exit 1 when this strategy ends twice, lost, deadlock or error in any "
                  "schedule explored (repeatable)")
      ->check(ListedValues(strategy_names));
  AddDecimal(sub, "--seed", args->seed, "Seed for the ids, and for --runs (default 1; 0 to 2^64-1)",
             uint64_t{0}, UINT64_MAX);
  AddDecimal(sub, "--runs", args->runs,
             "Seeded random mode: this many random larger runs per strategy", int64_t{1},
             int64_t{10000000});
  AddDecimal(sub, "--replay", args->replay,
             "With --seed and one --strategy: run that random run again, traced", int64_t{0},
             int64_t{10000000});
  sub->add_option("--journal", args->journal, "SQLite journal mode (default wal)")
      ->check(CLI::IsMember({"wal", "delete"}))
      ->each([args](const std::string&) { args->given_journal = true; });
  const BackendOptions backend =
      AddBackendOptions(sub, args->backend, args->dsn, args->pg_schema, "explore on",
                        "a temporary file", "may reset",
                        "; on postgres the matrix marks the cells that differ from SQLite's");
  backend.schema->each([args](const std::string&) { args->given_pg_schema = true; });
  sub->add_option("--isolation", args->isolation,
                  "postgres: the consumers' isolation level: read-committed (default), "
                  "repeatable-read, serializable")
      ->check(CLI::IsMember({"read-committed", "repeatable-read", "serializable"}))
      ->each([args](const std::string&) { args->given_isolation = true; });
  sub->add_flag("--list", args->list, "List the strategies and faults");
  sub->add_flag("--no-reduction", args->no_reduction,
                "Run every interleaving, also those that only reorder independent steps "
                "(the counts grow; the verdicts and shortest counterexamples stay)");
  AddDecimal(sub, "--instances", args->instances, "The concurrent fault's instances (default 2)", 1,
             kMaxInstances);
  AddDecimal(sub, "--deliveries", args->deliveries,
             "The concurrent fault's copies of the message, spread over the instances "
             "(default: one per instance)",
             1, 16);
  return {sub, [args]() -> int { return Run(*args); }};
}

}  // namespace dedupsim::cli
