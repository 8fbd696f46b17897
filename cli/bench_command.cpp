// dedupsim bench: parses the options, runs the bench (lib/bench), prints the table or the
// JSON object. Exit 1 when a strategy that promises exactly-once broke its promise.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench.h"
#include "bench/bench_report.h"
#include "commands.h"
#include "exit_status.h"
#include "options.h"
#include "progress.h"

namespace dedupsim::cli {

namespace {

struct BenchArgs {
  int64_t messages = 20000;
  double duplicate_rate = 0.3;
  int instances_count = 1;
  std::string instances = "threads";
  std::vector<std::string> strategies;
  std::string journal = "wal";
  std::string synchronous = "normal";
  uint64_t seed = 1;
  int repeat = 1;
  std::string format = "text";
  std::string checkpoints = "inside";
};

class ProgressView final : public BenchProgress {
 public:
  explicit ProgressView(bool wanted) : view_(wanted) {}
  void Started(Strategy strategy, int round, int rounds, int64_t total) override {
    view_.Start(rounds > 1
                    ? fmt::format("bench: {} (round {}/{})", ToString(strategy), round, rounds)
                    : fmt::format("bench: {}", ToString(strategy)),
                total, "messages");
  }
  void Advanced(int64_t handled, std::chrono::nanoseconds /*elapsed*/) override {
    view_.Show(handled);
  }
  void Finished() override { view_.Clear(); }

 private:
  TerminalProgress view_;
};

int Run(const BenchArgs& args) {
  BenchOptions options;
  options.workload.messages = args.messages;
  options.workload.duplicate_rate = args.duplicate_rate;
  options.workload.seed = args.seed;
  options.instances = args.instances_count;
  options.mode = args.instances == "processes" ? InstanceMode::kProcesses : InstanceMode::kThreads;
  options.settings.journal = args.journal == "delete" ? JournalMode::kDelete : JournalMode::kWal;
  options.settings.synchronous =
      args.synchronous == "full" ? Synchronous::kFull : Synchronous::kNormal;
  options.repeat = args.repeat;
  options.checkpoints_in_loop = args.checkpoints == "inside";
  if (!args.strategies.empty()) {
    options.strategies.clear();
    for (const std::string& name : args.strategies)
      options.strategies.push_back(*ParseStrategy(name));
  }

  // Ctrl-C or SIGTERM: cli/interrupt.h kills the instances, removes the temporary
  // databases and exits 130; nothing measured is reported.
  ProgressView progress(args.format != "json");  // JSON: no progress at all
  BenchReport report;
  try {
    report = RunBench(options, &progress, nullptr);
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "dedupsim: {}\n", e.what());
    return kExitUsage;
  }
  if (args.format == "json") {
    fmt::print("{}\n", BenchReportToJson(report).dump());
  } else {
    fmt::print("{}", FormatBenchTable(report));
  }
  std::fflush(stdout);
  for (const StrategyResult& r : report.results) {
    if (r.promises_exactly_once && !r.check.held()) {
      fmt::print(stderr, "dedupsim: check failed: {} reserved {} of {} (doubled {}, lost {})\n",
                 ToString(r.strategy), r.check.reserved, r.check.expected_reserved, r.check.doubled,
                 r.check.lost);
    }
  }
  return report.promises_held() ? kExitOk : kExitCheckFailed;
}

}  // namespace

Command AddBenchCommand(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  auto* sub = app.add_subcommand(
      "bench",
      "Measure each strategy's throughput, latency and correctness on one workload "
      "(exit 1 only when raw, inbox or natural-key doubles or loses an order)");
  AddDecimal(sub, "--messages", args->messages,
             "Deliveries in all, duplicates included (default 20000)", int64_t{1},
             int64_t{10'000'000});
  sub->add_option("--duplicate-rate", args->duplicate_rate,
                  "Share of deliveries that repeat an earlier message, in [0, 1] (default 0.3)")
      ->check(CLI::Range(0.0, 1.0));
  AddDecimal(sub, "--instances-count", args->instances_count,
             "Consumer instances competing for the deliveries (default 1)", 1, 64);
  sub->add_option("--instances", args->instances,
                  "Instances as threads or processes (default threads)")
      ->check(CLI::IsMember({"threads", "processes"}));
  std::vector<std::string> names;
  for (Strategy s : AllStrategies()) names.emplace_back(ToString(s));
  sub->add_option("--strategy", args->strategies,
                  "A strategy to run; repeat for several (default all: " + StrategyNames() + ")")
      ->check(CLI::IsMember(names));
  sub->add_option("--journal", args->journal, "SQLite journal mode (default wal)")
      ->check(CLI::IsMember({"wal", "delete"}));
  sub->add_option("--synchronous", args->synchronous, "SQLite synchronous level (default normal)")
      ->check(CLI::IsMember({"normal", "full"}));
  AddDecimal(sub, "--seed", args->seed, "Seed of the workload (default 1; 0 to 2^64-1)",
             uint64_t{0}, UINT64_MAX);
  AddDecimal(sub, "--repeat", args->repeat,
             "Rounds, interleaved; each strategy reports its median round (default 1)", 1, 100);
  sub->add_option("--checkpoints", args->checkpoints,
                  "inside: SQLite's automatic WAL checkpoints run while timed, as in production "
                  "(default); after: none while timed, to show what they cost")
      ->check(CLI::IsMember({"inside", "after"}));
  sub->add_option("--format", args->format, "text: a table; json: one object")
      ->check(CLI::IsMember({"text", "json"}));
  return {sub, [args]() -> int { return Run(*args); }};
}

}  // namespace dedupsim::cli
