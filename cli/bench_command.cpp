// dedupsim bench: parses the options, runs the bench (lib/bench), prints the table or the
// JSON object. Exit 1 when a strategy that promises exactly-once broke its promise (the
// registry's entries that say so, and the raw baseline: BenchStrategy::promises_exactly_once,
// which the help names too).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/databases.h"
#include "bench/bench.h"
#include "bench/bench_report.h"
#include "commands.h"
#include "exit_status.h"
#include "options.h"
#include "progress.h"
#include "world/broker/broker_setup.h"

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
  int64_t books = 0;
  std::string backend = "sqlite";
  std::string dsn;                     // postgres: an existing server; "": a throwaway cluster
  std::string pg_schema = "dedupsim";  // postgres: the schema dedupsim creates and owns
  std::string synchronous_commit = "on";
  std::string broker;      // "": the database-only run alone; sim, nats, rabbitmq: also through it
  std::string broker_url;  // nats, rabbitmq: a server the user runs; "": a private one
  // Given on the command line (not defaults): SQLite's options refused with postgres.
  bool given_sqlite_option = false;
  bool given_postgres_option = false;
};

class ProgressView final : public BenchProgress {
 public:
  explicit ProgressView(bool wanted) : view_(wanted) {}
  void Started(BenchStrategy strategy, int round, int rounds, int64_t total) override {
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
  options.workload.books = args.books;
  options.synchronous_commit = args.synchronous_commit == "on";
  const bool postgres = args.backend == "postgres";
  if (!args.strategies.empty()) {
    options.strategies.clear();
    for (const std::string& name : args.strategies)
      options.strategies.push_back(*ParseBenchStrategy(name));
  }
  if (postgres && args.given_sqlite_option) {
    fmt::print(stderr,
               "dedupsim: --journal, --synchronous and --checkpoints are SQLite's; not with "
               "--backend postgres\n");
    return kExitUsage;
  }
  if (!postgres && args.given_postgres_option) {
    fmt::print(stderr,
               "dedupsim: --dsn, --pg-schema and --synchronous-commit need --backend postgres\n");
    return kExitUsage;
  }

  if (args.broker.empty() && !args.broker_url.empty()) {
    fmt::print(stderr, "dedupsim: --broker-url needs --broker nats or rabbitmq\n");
    return kExitUsage;
  }
  const std::optional<BrokerKind> broker_kind =
      args.broker.empty() ? std::nullopt : ParseBrokerKind(args.broker);  // checked by the parser
  if (broker_kind == BrokerKind::kSimulated && !args.broker_url.empty()) {
    fmt::print(stderr, "dedupsim: --broker-url needs --broker nats or rabbitmq\n");
    return kExitUsage;
  }
  if (broker_kind && (options.instances != 1 || options.mode != InstanceMode::kThreads)) {
    fmt::print(stderr,
               "dedupsim: --broker runs one consumer instance (a thread): a broker queue is read "
               "here by one consumer connection, driven by one thread; not with "
               "--instances-count or --instances processes\n");
    return kExitUsage;
  }

  // PostgreSQL: a throwaway cluster for the whole command unless --dsn names a server, and
  // our own schema in it. Stopped and removed when Run returns or unwinds.
  std::unique_ptr<Databases> databases;
  if (postgres) {
    databases = OpenDatabases(
        DatabaseChoice{.backend = "postgres", .dsn = args.dsn, .schema = args.pg_schema});
    options.databases = databases.get();
  }

  // The broker: a private server for this command (unless --broker-url names one), stopped
  // when Run returns or unwinds, or on an interrupt (cli/interrupt.h).
  std::unique_ptr<BrokerSetup> broker;
  if (broker_kind) {
    broker = BrokerSetup::Start(*broker_kind, args.broker_url);
    options.brokers = &broker->brokers();
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
      "Measure each strategy's throughput, latency and correctness on one workload (exit 1 "
      "only when " + ExactlyOnceStrategyNames() + " doubles or loses an order)");
  AddDecimal(sub, "--messages", args->messages,
             "Deliveries in all, duplicates included (default 20000)", int64_t{1},
             int64_t{10'000'000});
  AddShare(sub, "--duplicate-rate", args->duplicate_rate,
           "Share of deliveries that repeat an earlier message, in [0, 1] (default 0.3)");
  AddDecimal(sub, "--instances-count", args->instances_count,
             "Consumer instances competing for the deliveries (default 1)", 1, 64);
  sub->add_option("--instances", args->instances,
                  "Instances as threads or processes (default threads)")
      ->check(CLI::IsMember({"threads", "processes"}));
  std::vector<std::string> names;
  for (BenchStrategy s : AllBenchStrategies()) names.emplace_back(ToString(s));
  sub->add_option("--strategy", args->strategies,
                  "A strategy to run; repeat for several (default all: " + BenchStrategyNames() + ")")
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
  AddDecimal(sub, "--books", args->books,
             "Books the orders reserve: 0 gives each order its own (default); N spreads them "
             "over N books, 1 puts every order on one hot row",
             int64_t{0}, int64_t{10'000'000});
  const BackendOptions pg =
      AddBackendOptions(sub, args->backend, args->dsn, args->pg_schema, "run on",
                        "a temporary file per round", "empties each round");
  auto* dsn = pg.dsn;
  auto* schema = pg.schema;
  auto* sync_commit =
      sub->add_option("--synchronous-commit", args->synchronous_commit,
                      "postgres: each instance's synchronous_commit, on (default) or off")
          ->check(CLI::IsMember({"on", "off"}));
  AddBrokerOptions(sub, args->broker, args->broker_url,
                   "each strategy's deliveries also go through, one consumer receiving, handling "
                   "and acking one at a time, reported beside the database-only figure",
                   /*sim_is_default=*/false);
  auto* journal = sub->get_option("--journal");
  auto* synchronous = sub->get_option("--synchronous");
  auto* checkpoints = sub->get_option("--checkpoints");
  return {sub, [args, dsn, schema, sync_commit, journal, synchronous, checkpoints]() -> int {
            args->given_sqlite_option =
                journal->count() + synchronous->count() + checkpoints->count() > 0;
            args->given_postgres_option = dsn->count() + schema->count() + sync_commit->count() > 0;
            return Run(*args);
          }};
}

}  // namespace dedupsim::cli
