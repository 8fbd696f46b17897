// dedupsim docs: for maintainers. Runs every scenario that has a page in the folder with
// the default options and rewrites the page's generated sections (Output, Diagram), or
// with --check only reports the pages that are out of date.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdio>
#include <memory>
#include <string>

#include "atomic_file.h"
#include "commands.h"
#include "crash.h"
#include "database.h"
#include "exit_status.h"
#include "runner.h"
#include "scenarios.h"
#include "views/doc_page.h"

namespace dedupsim::cli {

namespace {

struct DocsArgs {
  std::string folder = "docs/scenarios";
  bool check = false;
};

bool IsFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool IsFolder(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string ReadWhole(const std::string& path) {
  std::string text;
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) text.append(buffer, n);
    std::fclose(f);
  }
  return text;
}

int Docs(const DocsArgs& args) {
  if (!IsFolder(args.folder)) {
    fmt::print(stderr, "dedupsim: docs: {} is not a folder\n", args.folder);
    return kExitUsage;
  }
  DatabaseFile db = DatabaseFile::CreateTemporary(DatabaseSettings{});
  RunOptions options;  // the defaults of `dedupsim run`
  SystemClock clock;
  Recorder recorder;
  IdGenerator ids;
  ScenarioEnv env{options, db, clock, recorder, ids};
  int status = kExitOk;
  for (const Scenario* scenario : AllScenarios()) {
    const std::string path = fmt::format("{}/{}.md", args.folder, scenario->name);
    if (!IsFile(path)) {
      fmt::print(stderr, "dedupsim: docs: no page for scenario '{}' ({})\n", scenario->name, path);
      continue;
    }
    const std::string page = ReadWhole(path);
    ScenarioResult result;
    try {
      result = RunScenario(*scenario, env, /*check=*/true);
    } catch (const UnplannedDeath&) {
      throw;  // a child's death, said as such
    } catch (const DatabaseError& e) {
      throw InDatabase(db.path(), e);  // every database error names the file
    }
    if (!result.differences.empty()) {
      // A page must show what the lesson says; a run that went otherwise is not written.
      for (const std::string& d : result.differences)
        fmt::print(stderr, "dedupsim: docs: check failed: {}\n", d);
      status = kExitCheckFailed;
      continue;
    }
    std::string rewritten;
    try {
      rewritten = RewritePage(
          page, ScenarioPageSections(scenario->name, result.outcome.line, result.events));
    } catch (const DocPageError& e) {
      fmt::print(stderr, "dedupsim: docs: {}: {}\n", path, e.what());
      return kExitUsage;
    }
    if (rewritten == page) continue;
    if (args.check) {
      fmt::print(stderr, "dedupsim: docs: {} is out of date (run: dedupsim docs {})\n", path,
                 args.folder);
      status = kExitCheckFailed;
      continue;
    }
    try {
      AtomicFile file(path);
      file.Commit(rewritten);
    } catch (const OutputFileError& e) {
      fmt::print(stderr, "dedupsim: {}\n", e.what());
      return kExitCannotWrite;
    }
    fmt::print("updated {}\n", path);
  }
  return status;
}

}  // namespace

Command AddDocsCommand(CLI::App& app) {
  auto args = std::make_shared<DocsArgs>();
  auto* sub = app.add_subcommand(
      "docs",
      "For maintainers: rewrite the generated Output and Diagram sections of the scenario pages");
  sub->add_option("folder", args->folder, "Folder of the scenario pages (default docs/scenarios)");
  sub->add_flag("--check", args->check, "Write nothing; exit 1 when a page is out of date");
  return {sub, [args]() -> int { return Docs(*args); }};
}

}  // namespace dedupsim::cli
