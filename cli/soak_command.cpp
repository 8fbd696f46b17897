// dedupsim soak: parses the options, runs the soak (lib/soak) with Ctrl-C turned into a
// clean stop, prints what the database says. Exit 1 when an invariant failed.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/databases.h"
#include "commands.h"
#include "exit_status.h"
#include "options.h"
#include "world/broker/nats_library.h"
#include "world/broker/nats_server.h"
#include "progress.h"
#include "soak/soak.h"
#include "soak/soak_report.h"

namespace dedupsim::cli {

// Its own names (SoakArgs, ProgressView, Run) in a namespace of their own: the file shares a
// unity batch with commands whose unnamed namespace holds the same names.
namespace soak_file {

namespace {

struct SoakArgs {
  int64_t messages = 5000;
  double duplicate_rate = 0.3;
  int consumers = 4;
  std::string strategy = "inbox";
  int kill_every_ms = 50;
  int lease_ms = 200;
  int timeout_s = 300;
  std::string journal = "wal";
  std::string synchronous = "normal";
  uint64_t seed = 1;
  std::string db;
  std::string format = "text";
  std::string backend = "sqlite";
  std::string dsn;                     // postgres: an existing server; "": a throwaway cluster
  std::string pg_schema = "dedupsim";  // postgres: the schema dedupsim creates and owns
  std::string role = "all";
  std::string broker = "sim";  // sim: the database's broker table; nats: NATS JetStream
  std::string broker_url;
  bool given_fleet_option = false;     // --consumers or --kill-every-ms
  bool given_sqlite_option = false;    // --journal, --synchronous or --db on the command line
  bool given_postgres_option = false;  // --dsn or --pg-schema
};

class ProgressView final : public SoakProgress {
 public:
  explicit ProgressView(bool wanted) : view_(wanted) {}
  void Update(int64_t acked, int64_t total, int64_t /*kills*/,
              std::chrono::nanoseconds /*elapsed*/) override {
    if (!started_) {
      view_.Start("soak: acked", total, "messages");
      started_ = true;
    }
    view_.Show(acked);
  }
  void Finished() override { view_.Clear(); }

 private:
  TerminalProgress view_;
  bool started_ = false;
};

int Run(const SoakArgs& args) {
  SoakOptions options;
  options.workload.messages = args.messages;
  options.workload.duplicate_rate = args.duplicate_rate;
  options.workload.seed = args.seed;
  options.consumers = args.consumers;
  options.strategy = *ParseBenchStrategy(args.strategy);
  options.kill_every = std::chrono::milliseconds(args.kill_every_ms);
  options.lease = std::chrono::milliseconds(args.lease_ms);
  options.timeout = std::chrono::seconds(args.timeout_s);
  options.settings.journal = args.journal == "delete" ? JournalMode::kDelete : JournalMode::kWal;
  options.settings.synchronous =
      args.synchronous == "full" ? Synchronous::kFull : Synchronous::kNormal;
  options.db_path = args.db;
  const bool postgres = args.backend == "postgres";
  if (postgres && args.given_sqlite_option) {
    fmt::print(stderr,
               "dedupsim: --db, --journal and --synchronous are SQLite's; with --backend "
               "postgres use --dsn\n");
    return kExitUsage;
  }
  if (!postgres && args.given_postgres_option) {
    fmt::print(stderr, "dedupsim: --dsn and --pg-schema need --backend postgres\n");
    return kExitUsage;
  }
  if (args.role != "all" && (!postgres || args.dsn.empty())) {
    fmt::print(stderr,
               "dedupsim: --role {} needs --backend postgres and --dsn: a server every "
               "process can reach\n",
               args.role);
    return kExitUsage;
  }
  if (args.role != "all" && args.given_fleet_option) {
    fmt::print(stderr,
               "dedupsim: --consumers and --kill-every-ms are for --role all (one machine); "
               "with --role, start the consumers yourself and kill them by hand\n");
    return kExitUsage;
  }
  if (args.broker == "rabbitmq") {
    fmt::print(stderr,
               "dedupsim: soak --broker rabbitmq is not built: the soak runs through the "
               "database's broker table (sim) or NATS JetStream (nats) (docs/brokers.md)\n");
    return kExitUsage;
  }
  if (args.broker == "sim" && !args.broker_url.empty()) {
    fmt::print(stderr, "dedupsim: --broker-url needs --broker nats\n");
    return kExitUsage;
  }
  if (args.broker == "nats" && args.role != "all" && args.broker_url.empty()) {
    fmt::print(stderr,
               "dedupsim: --role {} with --broker nats needs --broker-url: a server every "
               "process can reach\n",
               args.role);
    return kExitUsage;
  }
  // NATS: a private nats-server for the command unless --broker-url names one; stopped and
  // removed when Run returns or unwinds. Nothing here connects to it: the soak's consumers
  // do, after they are forked (nats_soak_queue.h).
  std::optional<NatsServer> nats;
  if (args.broker == "nats") {
    RequireNatsLibrary();  // one line and exit 3 before a server is started, when missing
    if (args.broker_url.empty()) nats.emplace(NatsServer::Start());
    options.nats_url = args.broker_url.empty() ? nats->url() : args.broker_url;
  }
  // PostgreSQL: a throwaway cluster for the command unless --dsn names a server, and our
  // own schema in it; stopped and removed when Run returns or unwinds.
  std::unique_ptr<Databases> databases;
  if (postgres) {
    databases = OpenDatabases(
        DatabaseChoice{.backend = "postgres", .dsn = args.dsn, .schema = args.pg_schema});
    options.databases = databases.get();
  }

  // Ctrl-C or SIGTERM: cli/interrupt.h kills the consumers, removes a temporary database
  // and exits 130; a kept --db stays valid.
  ProgressView progress(args.format != "json");  // JSON: no progress at all
  SoakReport report;
  try {
    if (args.role == "consumer") {
      SoakConsumerReport c = RunSoakConsumer(options, nullptr);
      if (args.format == "json") {
        fmt::print("{}\n", SoakConsumerReportToJson(c).dump());
      } else {
        fmt::print("{}", FormatSoakConsumerReport(c));
      }
      return c.run_done ? kExitOk : kExitCheckFailed;
    }
    report = args.role == "supervisor" ? RunSoakSupervisor(options, &progress, nullptr)
                                       : RunSoak(options, &progress, nullptr);
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "dedupsim: {}\n", e.what());
    return kExitUsage;
  }
  if (args.format == "json") {
    fmt::print("{}\n", SoakReportToJson(report).dump());
  } else {
    fmt::print("{}", FormatSoakReport(report));
  }
  std::fflush(stdout);
  for (const std::string& error : report.errors) fmt::print(stderr, "dedupsim: {}\n", error);
  return report.held() ? kExitOk : kExitCheckFailed;
}

}  // namespace
}  // namespace soak_file

Command AddSoakCommand(CLI::App& app) {
  auto args = std::make_shared<soak_file::SoakArgs>();
  auto* sub = app.add_subcommand(
      "soak",
      "Kill competing consumer processes at random and check every message took effect once");
  AddDecimal(sub, "--seed", args->seed,
             "Seed of the workload and of the kill schedule (default 1; 0 to 2^64-1)", uint64_t{0},
             UINT64_MAX);
  AddDecimal(sub, "--messages", args->messages,
             "Broker entries, duplicates included (default 5000)", int64_t{1}, int64_t{1'000'000});
  AddShare(sub, "--duplicate-rate", args->duplicate_rate,
           "Share of entries that repeat an earlier message, in [0, 1] (default 0.3)");
  AddDecimal(sub, "--consumers", args->consumers, "Consumer processes (default 4)", 1, 32);
  // The consumers of the registry the soak runs (bench/strategy.h), the default first.
  std::vector<std::string> strategies{args->strategy};
  for (BenchStrategy s : ConsumerStrategies()) {
    if (s.name() != args->strategy) strategies.emplace_back(s.name());
  }
  std::string names;
  for (const std::string& name : strategies) {
    names += (names.empty() ? "" : ", ") + name + (name == args->strategy ? " (default)" : "");
  }
  sub->add_option("--strategy", args->strategy, "Consumer: " + names)
      ->check(CLI::IsMember(strategies));
  AddDecimal(
      sub, "--kill-every-ms", args->kill_every_ms,
      "Mean gap between SIGKILLs, each drawn in [0.5, 1.5] times it and counted from the previous "
      "kill (a consumer still starting is waited for); 0: no kills (default 50)", 0,
      60000);
  AddDecimal(sub, "--lease-ms", args->lease_ms,
             "Visibility timeout: an unacked delivery comes back after it (default 200)", 10,
             60000);
  AddDecimal(sub, "--timeout-s", args->timeout_s,
             "Give up, and fail, after this long (default 300)", 1, 86400);
  sub->add_option("--journal", args->journal, "SQLite journal mode (default wal)")
      ->check(CLI::IsMember({"wal", "delete"}));
  sub->add_option("--synchronous", args->synchronous, "SQLite synchronous level (default normal)")
      ->check(CLI::IsMember({"normal", "full"}));
  AddFileOption(sub, "--db", args->db,
                "Database file to use and keep (created if missing; only a dedupsim database "
                "is ever used). Default: a temporary file removed at the end");
  sub->add_option("--format", args->format, "text: a few lines; json: one object")
      ->check(CLI::IsMember({"text", "json"}));
  const BackendOptions pg = AddBackendOptions(sub, args->backend, args->dsn, args->pg_schema,
                                              "run on", "a file", "empties");
  auto* dsn = pg.dsn;
  auto* schema = pg.schema;
  AddBrokerOptions(sub, args->broker, args->broker_url,
                   "the deliveries go through (sim: the database's own broker table; nats: a "
                   "JetStream stream whose consumer's AckWait is --lease-ms; rabbitmq is refused)");
  sub->add_option("--role", args->role,
                  "all: the supervisor forks and kills the consumers (default); with --dsn, "
                  "supervisor: fill the broker, wait until every entry is acked, verify; "
                  "consumer: lease, handle and ack until the supervisor ends the run (start "
                  "as many as you like, on any machine that reaches the server)")
      ->check(CLI::IsMember({"all", "supervisor", "consumer"}));
  auto* journal = sub->get_option("--journal");
  auto* synchronous = sub->get_option("--synchronous");
  auto* db = sub->get_option("--db");
  auto* consumers = sub->get_option("--consumers");
  auto* kill_every = sub->get_option("--kill-every-ms");
  return {sub, [args, dsn, schema, journal, synchronous, db, consumers, kill_every]() -> int {
            args->given_fleet_option = consumers->count() + kill_every->count() > 0;
            args->given_sqlite_option = journal->count() + synchronous->count() + db->count() > 0;
            args->given_postgres_option = dsn->count() + schema->count() > 0;
            return soak_file::Run(*args);
          }};
}

}  // namespace dedupsim::cli
