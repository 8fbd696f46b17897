#include "outputs.h"

#include <fmt/format.h>

#include "backends/databases.h"
#include "os/atomic_file.h"

namespace dedupsim::cli {

std::vector<UsedFile> DatabaseFiles(const std::string& path) {
  std::vector<UsedFile> files;
  for (const std::string& file : FilesOfDatabase(DatabaseChoice{.path = path})) {
    files.push_back({file, file == path ? fmt::format("the database {}", path)
                                        : fmt::format("a file of the database {}", path)});
  }
  return files;
}

std::optional<std::string> OutputMisfit(const std::vector<OutputFile>& outputs,
                                        const std::vector<UsedFile>& used) {
  std::vector<std::string> used_paths;
  for (const UsedFile& u : used) used_paths.push_back(u.path);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const OutputFile& out = outputs[i];
    if (out.path.empty()) return fmt::format("{}: an empty file name", out.option);
    if (auto same = SameFileAsAny(out.path, used_paths)) {
      for (const UsedFile& u : used) {
        if (u.path != *same) continue;
        return fmt::format("{} {}: that is {}, which this run reads or writes; not writing it",
                           out.option, out.path, u.role);
      }
    }
    for (size_t j = 0; j < i; ++j) {
      if (SameFileAsAny(out.path, {outputs[j].path})) {
        return fmt::format("{} {} and {} {} name one file: one output would replace the other",
                           outputs[j].option, outputs[j].path, out.option, out.path);
      }
    }
  }
  return std::nullopt;
}

}  // namespace dedupsim::cli
