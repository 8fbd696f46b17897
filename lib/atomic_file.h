// A file written whole or not at all: the content goes to a temporary file in the same
// folder, which is flushed to disk and then renamed over the target, so a reader sees the
// old file or the complete new one. The temporary file is created in the constructor, so
// a path that cannot be written fails before any work is done; it is removed again unless
// Commit() succeeded. Not thread-safe; one object per file.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace dedupsim {

// A one-line reason why an output file cannot be written. Maps to exit status 3.
class OutputFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class AtomicFile {
 public:
  // Refuses (OutputFileError) an empty path, a directory or other non-regular file at
  // path, a missing folder, and a folder where no file can be created.
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
  bool committed_ = false;
};

}  // namespace dedupsim
