#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "exit_status.h"
#include "scenarios.h"

namespace dedupsim::cli {

Command AddListCommand(CLI::App& app) {
  auto* sub = app.add_subcommand("list", "List the scenarios: name, tag and what each shows");
  auto format = std::make_shared<std::string>("text");
  sub->add_option("--format", *format, "Output format")->check(CLI::IsMember({"text", "json"}));
  return {sub, [format]() -> int {
    for (const Scenario* s : AllScenarios()) {
      if (*format == "json") {
        nlohmann::ordered_json j{{"scenario", s->name},
                                 {"tag", s->tag},
                                 {"inPost", s->in_post},
                                 {"summary", s->summary}};
        fmt::print("{}\n", j.dump());
      } else {
        fmt::print("{:<22} {:<20} {}\n", s->name, fmt::format("[{}]", s->tag), s->summary);
      }
    }
    return kExitOk;
  }};
}

}  // namespace dedupsim::cli
