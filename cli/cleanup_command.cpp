// dedupsim cleanup: the nightly Inbox cleanup as a command. Deletes the completed Inbox
// records received more than --older-than ago from an existing dedupsim database (a file,
// or with --backend postgres a schema a dedupsim run created on the server --dsn names);
// never creates a file or a schema, and refuses any file or schema dedupsim did not make.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "backends/databases.h"
#include "commands.h"
#include "core/clock.h"
#include "core/duration.h"
#include "exit_status.h"
#include "options.h"
#include "store/lesson_tables.h"

namespace dedupsim::cli {

namespace {

struct CleanupArgs {
  std::string db;
  std::string older_than;
  std::string format = "text";
  std::string backend = "sqlite";
  std::string dsn;
  std::string pg_schema = "dedupsim";
  bool given_pg_schema = false;
};

int Cleanup(const CleanupArgs& args) {
  const std::chrono::milliseconds age = *ParseDuration(args.older_than);  // checked by the parser
  const bool postgres = args.backend == "postgres";
  if (postgres && (!args.db.empty() || args.dsn.empty())) {
    fmt::print(stderr,
               "dedupsim: cleanup --backend postgres needs --dsn (the server whose dedupsim "
               "schema to clean; a throwaway server would have no records) and no --db\n");
    return kExitUsage;
  }
  if (!postgres && (!args.dsn.empty() || args.db.empty())) {
    fmt::print(stderr, "dedupsim: cleanup needs --db FILE (or --backend postgres --dsn ...)\n");
    return kExitUsage;
  }
  if (!postgres && args.given_pg_schema) {
    fmt::print(stderr, "dedupsim: --pg-schema needs --backend postgres\n");
    return kExitUsage;
  }
  SystemClock clock;
  CleanupResult result;
  // Only a file or a schema a dedupsim run created and marked; nothing is created here.
  WithExistingStore(DatabaseChoice{.backend = args.backend,
                                   .path = args.db,
                                   .dsn = args.dsn,
                                   .schema = args.pg_schema},
                    [&](Store& store) {
                      result = store.tables().DeleteInboxRecordsOlderThan(clock.Now(), age);
                    });
  const std::string& where = args.db;
  if (args.format == "json") {
    nlohmann::ordered_json j;
    if (postgres) {
      j["backend"] = "postgres";
      j["schema"] = args.pg_schema;
    } else {
      j["db"] = where;
    }
    j.update(nlohmann::ordered_json{{"olderThan", FormatDuration(age)},
                                    {"cutoff", result.cutoff},
                                    {"deleted", result.deleted},
                                    {"kept", result.kept},
                                    {"keptInProgress", result.kept_in_progress}});
    fmt::print("{}\n", j.dump());
  } else {
    fmt::print("deleted {} Inbox record(s) received before {} (older than {}); kept {}",
               result.deleted, result.cutoff, FormatDuration(age), result.kept);
    if (result.kept_in_progress > 0) {
      fmt::print(", of which {} older but still in progress (left for reconciliation)",
                 result.kept_in_progress);
    }
    fmt::print("\n");
  }
  return kExitOk;
}

}  // namespace

Command AddCleanupCommand(CLI::App& app) {
  auto args = std::make_shared<CleanupArgs>();
  auto* sub = app.add_subcommand(
      "cleanup", "Delete completed Inbox records older than a duration from a dedupsim database");
  AddFileOption(sub, "--db", args->db,
                "An existing dedupsim database (never created here); not with --backend "
                "postgres");
  sub->add_option("--older-than", args->older_than,
                  "Delete records received longer ago than this: 14d, 36h, 90m, 30s (at most "
                  "36525d)")
      ->required()
      ->check(CLI::Validator(
          [](const std::string& text) -> std::string { return DurationProblem(text); },
          "DURATION"));
  sub->add_option("--format", args->format, "text: one line; json: one JSON object")
      ->check(CLI::IsMember({"text", "json"}));
  const BackendOptions backend =
      AddBackendOptions(sub, args->backend, args->dsn, args->pg_schema, "clean", "--db FILE",
                        "cleans (it must exist: cleanup creates nothing)",
                        "; with postgres, --dsn is needed");
  CLI::Option* pg_schema = backend.schema;
  return {sub, [args, pg_schema]() -> int {
            args->given_pg_schema = pg_schema->count() > 0;
            return Cleanup(*args);
          }};
}

}  // namespace dedupsim::cli
