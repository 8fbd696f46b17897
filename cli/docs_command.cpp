// dedupsim docs: for maintainers. Runs every scenario that has a page in the folder with
// the default options and rewrites the page's generated sections (Output, Diagram); with
// --cli FILE, also rewrites FILE's Reference and Exit status sections from the command
// definitions (reference.h: the CLI11 app walked, so every command and option is there as
// defined; the man page is another view of the same description). With --check it only
// reports the pages that are out of date. With --index FILE (docs/README.md), also rewrites
// FILE's list of the lessons by theme from the table of scenarios (scenarios.h: each lesson's registration).
#include <fmt/format.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "backends/databases.h"
#include "commands.h"
#include "exit_status.h"
#include "lesson/crash.h"
#include "lesson/runner.h"
#include "options.h"
#include "os/atomic_file.h"
#include "reference.h"
#include "scenarios.h"
#include "views/doc_page.h"

namespace dedupsim::cli {

namespace {

struct DocsArgs {
  std::string folder = "docs/scenarios";
  std::string cli_page;  // docs/cli.md, or "" for none
  std::string index_page;  // docs/README.md, or "" for none
  bool check = false;
};

// The lessons by theme, for the index page: a line per theme (wrapped at 100 columns) that
// links every lesson of the theme, in the table's order, to its page in `folder` (written
// relative to the index's folder when it lies under it).
std::string LessonsByTheme(const std::string& index_page, const std::string& folder) {
  const size_t slash = index_page.find_last_of('/');
  const std::string index_folder = slash == std::string::npos ? "" : index_page.substr(0, slash + 1);
  std::string pages = folder;
  if (!index_folder.empty() && pages.rfind(index_folder, 0) == 0) {
    pages = pages.substr(index_folder.size());
  }
  std::string out;
  for (Theme theme : kThemes) {
    std::vector<std::string> words{fmt::format("- **{}**", ThemeTitle(theme))};
    if (theme == Theme::kPostsSix) words.back() += " (`dedupsim run all`)";
    words.back() += ":";
    std::vector<const Scenario*> lessons;
    for (const Scenario* s : AllScenarios()) {
      if (ThemeOf(*s) == theme) lessons.push_back(s);
    }
    for (size_t i = 0; i < lessons.size(); ++i) {
      words.push_back(fmt::format("[{0}]({1}/{0}.md){2}", lessons[i]->name, pages,
                                  i + 1 == lessons.size() ? "." : ","));
    }
    std::string line;
    for (const std::string& word : words) {
      if (!line.empty() && line.size() + 1 + word.size() > 100) {
        out += line + "\n";
        line = "  ";
      } else if (!line.empty()) {
        line += ' ';
      }
      line += word;
    }
    out += line + "\n";
  }
  return out;
}

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
  if (!args.index_page.empty()) {
    if (!IsFile(args.index_page)) {
      fmt::print(stderr, "dedupsim: docs: --index {} is not a file\n", args.index_page);
      return kExitUsage;
    }
    const int index_status = UpdatePage(
        args.index_page,
        {{"The lessons, by theme", "lessons", LessonsByTheme(args.index_page, args.folder)}},
        args.check, "dedupsim docs --index " + args.index_page);
    if (index_status != kExitOk && index_status != kExitCheckFailed) return index_status;
    if (cli_status == kExitOk) cli_status = index_status;
  }
  RunOptions options;  // the defaults of `dedupsim run`
  Recorder recorder;
  constexpr uint64_t kDocsIdSeed = 1;
  int status = kExitOk;
  for (const Scenario* scenario : AllScenarios()) {
    const std::string path = fmt::format("{}/{}.md", args.folder, scenario->name);
    if (!IsFile(path)) {
      fmt::print(stderr, "dedupsim: docs: no page for scenario '{}' ({})\n", scenario->name, path);
      continue;
    }
    // Each lesson on a database of its own, with the same ids and clock on every run,
    // whatever ran before it and whichever pages are asked for: what the page shows (the
    // reset's note of the tables it emptied, a payload hash over the order's ids, a time the
    // email provider recorded) cannot drift.
    // A new temporary SQLite file, removed after the page (backends/databases.h).
    const std::unique_ptr<LessonDatabase> db = OpenLessonDatabase(DatabaseChoice{}, LessonSettings{});
    IdGenerator ids(kDocsIdSeed);
    SteppingClock clock;  // from the same start for every page
    ScenarioEnv env{options, db->backend(), db->sides(), clock, recorder, ids};
    ScenarioResult result;
    try {
      result = RunScenario(*scenario, env, /*check=*/true);
    } catch (const DatabaseError& e) {
      db->Rethrow(e);  // every database error names the file
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
  AddFileOption(sub, "--index", args->index_page,
                "Also rewrite this page's generated list of the lessons by theme (docs/README.md) "
                "from the table of scenarios");
  sub->add_flag("--check", args->check, "Write nothing; exit 1 when a page is out of date");
  CLI::App* root = &app;
  return {sub, [args, root]() -> int { return Docs(*args, *root); }};
}

}  // namespace dedupsim::cli
