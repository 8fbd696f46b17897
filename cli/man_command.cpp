// dedupsim __man [FILE]: hidden, for the build. Writes the man page dedupsim(1), generated
// from the command definitions (reference.h), to FILE (whole, or not at all) or stdout.
// The build installs what it writes: `man -l` on it shows the installed page.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "os/atomic_file.h"
#include "commands.h"
#include "exit_status.h"
#include "reference.h"

namespace dedupsim::cli {

Command AddManCommand(CLI::App& app) {
  auto* sub = app.add_subcommand("__man", "Write the man page dedupsim(1) (for the build)");
  auto file = std::make_shared<std::string>();
  sub->add_option("file", *file, "Where to write it (default: stdout)");
  CLI::App* root = &app;
  return {sub, [file, root]() -> int {
            const std::string page = ManPage(DescribeCli(*root), DEDUPSIM_VERSION);
            if (file->empty()) {
              fmt::print("{}", page);
              return kExitOk;
            }
            try {
              AtomicFile out(*file);
              out.Commit(page);
            } catch (const OutputFileError& e) {
              fmt::print(stderr, "dedupsim: {}\n", e.what());
              return kExitCannotWrite;
            }
            return kExitOk;
          }};
}

}  // namespace dedupsim::cli
