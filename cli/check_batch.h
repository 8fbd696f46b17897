// A class of consumer files graded at once (dedupsim check DIR, or several files): each file
// in a child process of its own (`dedupsim check --worker FILE`: its own temporary folder,
// database and schema), as many at once as there are jobs; a file that cannot be read or
// is wrong is a row with its FILE:LINE:COLUMN error, never the end of the batch. Prints each
// file's report in the order given (or one JSON object a line), then the summary: per file
// the verdict of each fault, the score and the seconds.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace dedupsim::cli {

// The consumer files the inputs name: a folder stands for its *.toml files (not its
// subfolders), in name order; anything else is taken as a file (one that cannot be read is
// that file's error row). nullopt, said on stderr, for a folder with no .toml file.
std::optional<std::vector<std::string>> ConsumerFilesOf(const std::vector<std::string>& inputs);

// A file's error as a batch row: {"file", "verdict": "error", "error": {"message", "line",
// "column", "text"}}, line and column read from what's "FILE:LINE:COLUMN: " (0 when absent).
nlohmann::ordered_json FileErrorLine(const std::string& path, const std::string& what);

struct BatchOptions {
  std::vector<std::string> files;
  int jobs = 0;  // 0: one per CPU this process may use
  bool json = false;
  std::chrono::duration<double> budget{0};  // a file's --budget (0: none)
  uint64_t seed = 1;
  std::vector<std::string> child_args;  // after `check --worker FILE`
};

// Grades the files and prints them; returns the exit status (2 when a file could not be
// graded, else 1 when one failed, else 4 when one was not searched exhaustively, else 0).
int RunBatch(const BatchOptions& options);

}  // namespace dedupsim::cli
