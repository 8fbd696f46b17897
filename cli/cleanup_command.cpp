// dedupsim cleanup: the nightly Inbox cleanup as a command. Deletes the completed Inbox
// records received more than --older-than ago from an existing dedupsim database; never
// creates a file, and refuses any file dedupsim did not make.
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "clock.h"
#include "commands.h"
#include "database.h"
#include "duration.h"
#include "exit_status.h"
#include "options.h"
#include "retention.h"

namespace dedupsim::cli {

namespace {

struct CleanupArgs {
  std::string db;
  std::string older_than;
  std::string format = "text";
};

int Cleanup(const CleanupArgs& args) {
  const std::chrono::milliseconds age = *ParseDuration(args.older_than);  // checked by the parser
  DatabaseFile db = DatabaseFile::Open(args.db, DatabaseSettings{}, IfMissing::kFail);
  SystemClock clock;
  CleanupResult result;
  try {
    Connection connection = db.Connect();
    result = DeleteInboxRecordsOlderThan(connection, clock.Now(), age);
  } catch (const DatabaseError& e) {
    throw InDatabase(db.path(), e);
  }
  if (args.format == "json") {
    nlohmann::ordered_json j{{"db", db.path()},
                             {"olderThan", FormatDuration(age)},
                             {"cutoff", result.cutoff},
                             {"deleted", result.deleted},
                             {"kept", result.kept},
                             {"keptInProgress", result.kept_in_progress}};
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
  AddFileOption(sub, "--db", args->db, "An existing dedupsim database (never created here)")
      ->required();
  sub->add_option("--older-than", args->older_than,
                  "Delete records received longer ago than this: 14d, 36h, 90m, 30s (at most "
                  "36525d)")
      ->required()
      ->check(CLI::Validator(
          [](const std::string& text) -> std::string { return DurationProblem(text); },
          "DURATION"));
  sub->add_option("--format", args->format, "text: one line; json: one JSON object")
      ->check(CLI::IsMember({"text", "json"}));
  return {sub, [args]() -> int { return Cleanup(*args); }};
}

}  // namespace dedupsim::cli
