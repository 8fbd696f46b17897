// dedupsim run's command line: its options (the lesson options from lesson/options.h's
// table, each with the kind of lesson that takes it and its default), read into RunArgs
// (cli/run_args.h) and handed to Run.
#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "core/duration.h"
#include "lesson/options.h"
#include "options.h"
#include "run_args.h"

namespace dedupsim::cli {

namespace {

// A row of the lesson options table as a CLI option reading into options: its help text
// says the lessons that take it (a kind, never their names) and its default; its value is
// checked as the row says.
void AddLessonOption(CLI::App* sub, const LessonOption& row, RunOptions& options) {
  const std::string flag(row.flag);
  const std::string help = LessonOptionHelp(row);
  CLI::Option* option = nullptr;
  switch (row.kind) {
    case OptionKind::kDecimal: {
      option = sub->add_option_function<std::string>(
          flag,
          [&options, &row, flag](const std::string& text) {
            DecimalResult r = ParseDecimal(text, static_cast<uint64_t>(row.min),
                                           static_cast<uint64_t>(row.max));
            if (!r.error.empty()) throw CLI::ValidationError(flag, r.error);
            row.set(options, static_cast<int64_t>(r.value));
          },
          help);
      // The range shows in --help and the generated reference as INT:MIN..MAX; the value is
      // checked by the function above (this validator only describes it).
      option->check(CLI::Validator([](const std::string&) { return std::string(); },
                                   std::to_string(row.min) + ".." + std::to_string(row.max)));
      option->type_name("INT");
      break;
    }
    case OptionKind::kChoice: {
      std::vector<std::string> choices(row.choices.begin(), row.choices.end());
      option = sub->add_option_function<std::string>(
          flag,
          [&options, &row](const std::string& text) {
            for (size_t i = 0; i < row.choices.size(); ++i) {
              if (row.choices[i] == text) row.set(options, static_cast<int64_t>(i));
            }
          },
          help);
      option->check(CLI::IsMember(choices));
      break;
    }
    case OptionKind::kDuration:
      option = sub->add_option_function<std::string>(
          flag,
          [&options, &row](const std::string& text) {
            row.set(options, ParseDuration(text)->count());  // checked by the validator below
          },
          help);
      option->check(CLI::Validator(
          [&row](const std::string& text) -> std::string {
            auto value = ParseDuration(text);
            if (!value) return DurationProblem(text);
            return row.duration_problem ? row.duration_problem(*value) : "";
          },
          "DURATION"));
      break;
  }
  option->default_str(row.show(RunOptions{}));
}

}  // namespace

Command AddRunCommand(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  auto* sub = app.add_subcommand(
      "run", "Run scenarios by name; 'all' runs the post's six, 'everything' runs every scenario");
  // Said after the options in --help, docs/cli.md and the man page: no list of lessons
  // stands there (a new lesson would rewrite them), the lesson says what it takes.
  // (A footer function: --help shows it before the exit statuses every command's footer has.)
  sub->footer([] {
    return std::string(
        "An option only some lessons take says which kind (lessons with a crash point: ...);\n"
        "dedupsim explain LESSON lists the ones a lesson takes, as the Options section of its\n"
        "page (docs/scenarios/LESSON.md) does.\n");
  });
  sub->add_option("scenarios", args->names,
                  "Scenario names (see dedupsim list), or all, everything; none with --file")
      ->type_name("SCENARIO|all|everything");
  sub->add_option("--file", args->files,
                  "Run a lesson written in a scenario file (TOML, see docs/files.md), or every "
                  "*.toml in a folder; may be given more than once")
      ->type_name("FILE|DIR")
      ->allow_extra_args(false)
      ->check(CLI::ExistingPath);
  AddFileOption(sub, "--db", args->db,
                "Database file to use and keep (created if missing; only a dedupsim database "
                "is ever reset; one dedupsim process at a time). Default: a temporary file "
                "removed at the end");
  sub->add_option("--format", args->format, "text: the post's lines; json: one JSON object per line")
      ->check(CLI::IsMember({"text", "json"}));
  const std::span<const LessonOption> lesson_options = LessonOptions();
  // --quantity to --stagger-ms, then --check to --synchronous, then the rest of the table:
  // the order --help has always shown.
  const size_t first_part = 4;
  for (const LessonOption& option : lesson_options.first(first_part)) {
    AddLessonOption(sub, option, args->options);
  }
  // Hidden (no group): lets the end-to-end tests see --check fail and exit 1.
  AddDecimal(sub, "--test-only-expect-hold-ms", args->test_only_expect_hold_ms, "", 0, 60000)
      ->group("");
  sub->add_flag("--check", args->check,
                "Compare each outcome with what the post says it must be; exit 1 on a difference");
  sub->add_flag("--trace", args->trace,
                "Show every step of every instance (stderr; in the JSON object with --format json)");
  sub->add_option("--journal", args->journal, "SQLite journal mode (default wal)")
      ->check(CLI::IsMember({"wal", "delete"}));
  sub->add_option("--synchronous", args->synchronous, "SQLite synchronous level (default normal)")
      ->check(CLI::IsMember({"normal", "full"}));
  for (const LessonOption& option : lesson_options.subspan(first_part)) {
    AddLessonOption(sub, option, args->options);
  }
  sub->add_option("--diagram", args->diagram,
                  "Print a Mermaid sequence diagram of each run after its line (in JSON: a "
                  "\"diagram\" field); the only kind is mermaid")
      ->check(CLI::IsMember({"mermaid"}));
  AddFileOption(sub, "--timeline", args->timeline,
                "Write an SVG timeline of the run to this .svg file (several scenarios: "
                "stacked sections of one file), replacing a regular file whole and keeping its "
                "mode; never a symbolic link, the database or any file the run uses")
      ->type_name("FILE.svg");
  AddFileOption(sub, "--html", args->html,
                "Write a step-through page of the run to this file: the steps, and the "
                "tables as they were after each one (self-contained HTML; keys, slider, a "
                "link per step); never a file the run uses")
      ->type_name("FILE.html");
  AddDecimal(sub, "--seed", args->seed,
             "Repeatable ids and timestamps: messages, orders and books get the same ids, "
             "and the records the same times (from 2030-01-07T09:00:00Z, a millisecond a "
             "reading), in every picture and page, on every run with the same seed",
             int64_t{0}, int64_t{1} << 53);
  const BackendOptions backend = AddBackendOptions(sub, args->backend, args->dsn, args->pg_schema,
                                                   "run on", "a file", "may reset");
  CLI::Option* pg_schema = backend.schema;
  AddBrokerOptions(sub, args->broker, args->broker_url,
                   "the lessons' messages go through");
  auto* isolation =
      sub->add_option("--isolation", args->isolation,
                      "postgres: the consumers' isolation level: read-committed "
                      "(default), repeatable-read, serializable")
          ->check(CLI::IsMember({"read-committed", "repeatable-read", "serializable"}));
  auto* db = sub->get_option("--db");
  auto* journal = sub->get_option("--journal");
  auto* synchronous = sub->get_option("--synchronous");
  auto* color = sub->add_option("--color", args->color,
                                "Color the tag and figures: auto (on a terminal, unless NO_COLOR "
                                "is set), always, never. JSON is never colored")
                    ->check(CLI::IsMember({"auto", "always", "never"}));
  CLI::App* root = &app;
  return {sub,
          [args, sub, color, root, isolation, db, journal, synchronous, pg_schema]() -> int {
            args->given_db = db->count() > 0;
            args->given_pg_schema = pg_schema->count() > 0;
            args->given_journal = journal->count() > 0 || synchronous->count() > 0;
            args->given_isolation = isolation->count() > 0;
            for (const LessonOption& option : LessonOptions()) {
              if (sub->get_option(std::string(option.flag))->count() > 0) {
                args->given.emplace_back(option.flag);
                if (option.flag == "--dedup-window") {
                  args->dedup_window_text =
                      sub->get_option(std::string(option.flag))->as<std::string>();
                }
              }
            }
            // --color given to run wins over the global one.
            if (color->count() == 0) {
              if (const CLI::Option* global = root->get_option_no_throw("--color"); global && global->count() > 0) {
                args->color = global->as<std::string>();
              }
            }
            return Run(*args);
          }};
}

}  // namespace dedupsim::cli
