// One rule for every output file a command writes (--timeline, --html, docs' pages and
// --cli, and any output added later), checked before anything runs: an output is never a
// file the run reads or writes (the database and its -wal, -shm, -journal and side stores,
// every file given, every file a given file names), never the file of another output, and
// never an empty name. A misfit is a usage error: exit 2 with the reason. Files are
// compared by device and inode when they exist, else by their resolved folder and name
// (SameFileAsAny), so ./shop.db, ../dir/shop.db and a hard link are caught alike.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dedupsim::cli {

// An output and the option that asked for it ("--html").
struct OutputFile {
  std::string option;
  std::string path;
};

// A file the run reads or writes, and what it is to the run ("the consumer file x.toml,
// named by lesson.toml"), for the message.
struct UsedFile {
  std::string path;
  std::string role;
};

// The database at path and every file beside it that a run on it may use.
std::vector<UsedFile> DatabaseFiles(const std::string& path);

// The one-line reason (without "dedupsim: ") why the outputs may not be written as
// given, or nullopt when they may.
std::optional<std::string> OutputMisfit(const std::vector<OutputFile>& outputs,
                                        const std::vector<UsedFile>& used);

}  // namespace dedupsim::cli
