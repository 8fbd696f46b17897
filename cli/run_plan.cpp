#include "run_plan.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <chrono>

#include "lesson/options.h"
#include "outputs.h"
#include "scenarios.h"
#include "world/broker/broker_setup.h"

namespace dedupsim::cli {

namespace {

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

}  // namespace

std::optional<std::string> PlanRun(const RunArgs& args, RunPlan& plan) {
  if (args.names.empty() && args.files.empty()) {
    return "run needs scenarios: names (see dedupsim list) or --file FILE";
  }
  std::string error;
  std::vector<const Scenario*>& scenarios = plan.scenarios;
  scenarios = Resolve(args.names, &error);
  if (!error.empty()) return error;
  // A scenario named alone must take every option given; with several, each option
  // applies to the scenarios it fits.
  if (args.names.size() == 1 && scenarios.size() == 1 && args.files.empty()) {
    if (auto misfit = OptionMisfit(*scenarios.front(), args.given)) {
      return fmt::format("{} (see dedupsim run --help)", *misfit);
    }
  }
  // Every scenario file must take every option given: a lesson never ignores one.
  FileLessons& lessons = plan.lessons;
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
          return fmt::format("{}: {}", one, *misfit);
        }
        scenarios.push_back(lessons.scenarios.back().get());
      }
    }
  } catch (const files::FileError& e) {
    return e.what();
  }

  if (auto misfit = BackendMisfit(args, scenarios)) return misfit;

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
  if (auto misfit = OutputMisfit(outputs, used)) return misfit;

  const BrokerKind broker_kind = *ParseBrokerKind(args.broker);  // checked by the parser
  if (broker_kind == BrokerKind::kSimulated && !args.broker_url.empty()) {
    return "--broker-url needs --broker nats or rabbitmq";
  }
  for (const Scenario* s : scenarios) {
    if (std::string why = BrokerMisfit(*s, broker_kind); !why.empty()) return why;
  }
  // A real broker's duplicate window is the server's, waited out in real time (the run
  // takes 1s when --dedup-window is not given).
  if (broker_kind != BrokerKind::kSimulated && args.Given("--dedup-window") &&
      args.options.dedup_window > std::chrono::seconds(30)) {
    return fmt::format(
        "--dedup-window {}: on a real broker the lesson waits the window out in real time: "
        "at most 30s",
        args.dedup_window_text);
  }
  return std::nullopt;
}

}  // namespace dedupsim::cli
