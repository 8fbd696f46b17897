// A file written whole or not at all: the content goes to a temporary file in the same
// folder, which is flushed to disk and then renamed over the target, so a reader sees the
// old file or the complete new one. The temporary file is created in the constructor, so
// a path that cannot be written fails before any work is done; it is removed again unless
// Commit() succeeded. Not thread-safe; one object per file.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace dedupsim {

// A one-line reason why an output file cannot be written. Maps to exit status 3.
class OutputFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Which of in_use (files a run is using: a database, its companions, its side stores) is
// the file target names, or would name once created: same device and inode for files
// that exist, the same resolved folder and name otherwise. nullopt when none.
std::optional<std::string> SameFileAsAny(const std::string& target,
                                         const std::vector<std::string>& in_use);

class AtomicFile {
 public:
  // Refuses (OutputFileError) an empty path, a symbolic link (it is never replaced, nor
  // written through), a directory or other non-regular file at path, a missing folder, and
  // a folder where no file can be created. A file that is replaced keeps its mode. The
  // temporary file is ".NAME.tmp-XXXXXX" (or ".dedupsim-tmp-XXXXXX" for a long NAME) and
  // is registered with run_files, so an interrupt removes it.
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Writes content, flushes it and renames the temporary file to path. Throws
  // OutputFileError, leaving no temporary file behind. Call once.
  void Commit(std::string_view content);

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string temp_;
  int fd_ = -1;
  int mode_ = -1;  // of the file replaced; -1: none
  bool committed_ = false;
};

}  // namespace dedupsim
