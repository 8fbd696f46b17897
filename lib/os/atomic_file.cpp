#include "os/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "os/run_files.h"

namespace dedupsim {

namespace {

std::string FolderOf(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string BaseOf(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

[[noreturn]] void Fail(const std::string& path, const std::string& why) {
  throw OutputFileError(fmt::format("cannot write {}: {}", path, why));
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  if (path_.empty()) Fail("''", "empty path");
  if (path_.back() == '/') Fail(path_, "it names a folder, not a file");
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      Fail(path_,
           "it is a symbolic link (only a regular file is replaced; name the file it points to)");
    }
    if (S_ISDIR(st.st_mode)) Fail(path_, "it is a directory");
    if (!S_ISREG(st.st_mode)) Fail(path_, "it exists and is not a regular file");
    mode_ = static_cast<int>(st.st_mode & 07777);  // the replacement keeps it
  }
  const std::string folder = FolderOf(path_);
  if (::stat(folder.c_str(), &st) != 0) {
    Fail(path_, fmt::format("folder {}: {}", folder, std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) Fail(path_, fmt::format("{} is not a folder", folder));
  temp_ = run_files::CreateAndRegister(
      [&] {
        std::string pattern = TemporaryNameBeside(path_, "tmp");
        std::vector<char> buffer(pattern.begin(), pattern.end());
        buffer.push_back('\0');
        fd_ = ::mkstemp(buffer.data());
        if (fd_ < 0) {
          Fail(path_, fmt::format("cannot create a file in {}: {}", folder, std::strerror(errno)));
        }
        return std::string(buffer.data());
      },
      /*companions=*/false);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
  if (!temp_.empty()) run_files::Forget(temp_);
}

void AtomicFile::Commit(std::string_view content) {
  if (fd_ < 0 || committed_) Fail(path_, "already written");
  auto fail = [&](const char* step) {
    std::string why = fmt::format("{}: {}", step, std::strerror(errno));
    ::close(fd_);
    fd_ = -1;
    ::unlink(temp_.c_str());
    run_files::Forget(temp_);
    temp_.clear();
    Fail(path_, why);
  };
  size_t off = 0;
  while (off < content.size()) {
    ssize_t n = ::write(fd_, content.data() + off, content.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write");
    off += static_cast<size_t>(n);
  }
  // mkstemp makes the file private (0600): give it the mode of the file it replaces, or
  // the mode a new file would get.
  mode_t mask = ::umask(0);
  ::umask(mask);
  const mode_t mode = mode_ >= 0 ? static_cast<mode_t>(mode_) : (0666 & ~mask);
  if (::fchmod(fd_, mode) != 0) fail("chmod");
  if (::fsync(fd_) != 0) fail("fsync");
  if (::close(fd_) != 0) {
    fd_ = -1;
    fail("close");
  }
  fd_ = -1;
  if (::rename(temp_.c_str(), path_.c_str()) != 0) fail("rename");
  committed_ = true;
  run_files::Forget(temp_);
}

namespace {

// realpath of the folder, then the name: the path a file there has or would have.
std::string Spelled(const std::string& path) {
  const std::string folder = FolderOf(path);
  char resolved[PATH_MAX];
  if (::realpath(folder.c_str(), resolved) == nullptr) return path;
  return std::string(resolved) + "/" + BaseOf(path);
}

}  // namespace

std::optional<std::string> SameFileAsAny(const std::string& target,
                                         const std::vector<std::string>& in_use) {
  struct stat t {};
  const bool target_exists = ::stat(target.c_str(), &t) == 0;
  const std::string target_spelled = Spelled(target);
  for (const std::string& path : in_use) {
    struct stat u {};
    if (target_exists && ::stat(path.c_str(), &u) == 0 && u.st_dev == t.st_dev &&
        u.st_ino == t.st_ino) {
      return path;
    }
    if (Spelled(path) == target_spelled) return path;
  }
  return std::nullopt;
}

}  // namespace dedupsim
