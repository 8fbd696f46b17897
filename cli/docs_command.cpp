// dedupsim docs: for maintainers. Runs every scenario that has a page in the folder with
// the default options and rewrites the page's generated sections (Output, Diagram); with
// --cli FILE, also rewrites FILE's Reference and Exit status sections from the command
// definitions (reference.h: the CLI11 app walked, so every command and option is there as
// defined; the man page is another view of the same description). With --check it only
// reports the pages that are out of date.
#include <fmt/format.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "exit_status.h"
#include "lesson/crash.h"
#include "lesson/runner.h"
#include "options.h"
#include "os/atomic_file.h"
#include "reference.h"
#include "scenarios.h"
#include "sqlite/database.h"
#include "views/doc_page.h"

namespace dedupsim::cli {

namespace {

struct DocsArgs {
  std::string folder = "docs/scenarios";
  std::string cli_page;  // docs/cli.md, or "" for none
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

// Rewrites (or with check, compares) one page with these sections; an ExitStatus.
int UpdatePage(const std::string& path, const std::vector<GeneratedSection>& sections, bool check,
               const std::string& how) {
  const std::string page = ReadWhole(path);
  std::string rewritten;
  try {
    rewritten = RewritePage(page, sections);
  } catch (const DocPageError& e) {
    fmt::print(stderr, "dedupsim: docs: {}: {}\n", path, e.what());
    return kExitUsage;
  }
  if (rewritten == page) return kExitOk;
  if (check) {
    fmt::print(stderr, "dedupsim: docs: {} is out of date (run: {})\n", path, how);
    return kExitCheckFailed;
  }
  try {
    AtomicFile file(path);
    file.Commit(rewritten);
  } catch (const OutputFileError& e) {
    fmt::print(stderr, "dedupsim: {}\n", e.what());
    return kExitCannotWrite;
  }
  fmt::print("updated {}\n", path);
  return kExitOk;
}

int Docs(const DocsArgs& args, CLI::App& app) {
  if (!IsFolder(args.folder)) {
    fmt::print(stderr, "dedupsim: docs: {} is not a folder\n", args.folder);
    return kExitUsage;
  }
  int cli_status = kExitOk;
  if (!args.cli_page.empty()) {
    if (!IsFile(args.cli_page)) {
      fmt::print(stderr, "dedupsim: docs: --cli {} is not a file\n", args.cli_page);
      return kExitUsage;
    }
    const CliDoc doc = DescribeCli(app);
    cli_status = UpdatePage(args.cli_page,
                            {{"Reference", "reference", MarkdownReference(doc)},
                             {"Exit status", "exit-status", MarkdownExitStatus()}},
                            args.check, "dedupsim docs --cli " + args.cli_page);
    if (cli_status != kExitOk && cli_status != kExitCheckFailed) return cli_status;
  }
  DatabaseFile db = DatabaseFile::CreateTemporary(DatabaseSettings{}, SetUpConnection::kKeep);
  RunOptions options;  // the defaults of `dedupsim run`
  SteppingClock clock;  // the same times on every run: a page shows what it read
  Recorder recorder;
  constexpr uint64_t kDocsIdSeed = 1;
  IdGenerator ids(kDocsIdSeed);
  ScenarioEnv env{options, db, clock, recorder, ids};
  int status = kExitOk;
  for (const Scenario* scenario : AllScenarios()) {
    // The same ids for a scenario on every run, whatever ran before it: what the page
    // shows of them (a payload hash covers the order's ids) cannot drift.
    ids = IdGenerator(kDocsIdSeed);
    const std::string path = fmt::format("{}/{}.md", args.folder, scenario->name);
    if (!IsFile(path)) {
      fmt::print(stderr, "dedupsim: docs: no page for scenario '{}' ({})\n", scenario->name, path);
      continue;
    }
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
    const int page_status =
        UpdatePage(path, ScenarioPageSections(scenario->name, result.outcome.line, result.events),
                   args.check, "dedupsim docs " + args.folder);
    if (page_status == kExitUsage || page_status == kExitCannotWrite) return page_status;
    if (page_status != kExitOk) status = page_status;
  }
  if (status == kExitOk) status = cli_status;
  return status;
}

}  // namespace

void CaptureDefaults(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    if (!option->get_default_str().empty()) continue;
    option->capture_default_str();
    // An empty list or text is no default.
    const std::string& text = option->get_default_str();
    if (text == "[]" || text == "\"\"") option->default_str("");
  }
  for (CLI::App* sub : app.get_subcommands({})) CaptureDefaults(*sub);
}

Command AddDocsCommand(CLI::App& app) {
  auto args = std::make_shared<DocsArgs>();
  auto* sub = app.add_subcommand(
      "docs",
      "For maintainers: rewrite the generated Output and Diagram sections of the scenario pages");
  sub->add_option("folder", args->folder, "Folder of the scenario pages (default docs/scenarios)")
      ->type_name("DIR");
  AddFileOption(sub, "--cli", args->cli_page,
                "Also rewrite this page's generated Reference section (docs/cli.md) from the "
                "command definitions");
  sub->add_flag("--check", args->check, "Write nothing; exit 1 when a page is out of date");
  CLI::App* root = &app;
  return {sub, [args, root]() -> int { return Docs(*args, *root); }};
}

}  // namespace dedupsim::cli
