#include "sqlite/error.h"

#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace dedupsim {

namespace {

// What the system said when a write failed: SQLite keeps errno in two places, neither
// always: the connection's (read when the error is reported, after SQLite's own clean-up
// may have changed errno) and the main file's (its last failed call).
int LastSystemError(sqlite3* db) {
  int last = sqlite3_system_errno(db);
  if (last == ENOSPC || last == EDQUOT || last == EFBIG) return last;
  int main_file = 0;
  if (sqlite3_file_control(db, "main", SQLITE_FCNTL_LAST_ERRNO, &main_file) == SQLITE_OK &&
      main_file != 0) {
    last = main_file;
  }
  return last;
}

bool NoRoomOnDisk(const std::string& file) {
  const std::string_view path(file);
  const size_t slash = path.rfind('/');
  const std::string folder(slash == std::string_view::npos ? "." : path.substr(0, slash + 1));
  struct statvfs fs {};
  // Free blocks for unprivileged writers; a write failed there: none left is a full disk.
  return ::statvfs(folder.c_str(), &fs) == 0 && fs.f_bavail == 0;
}

// The size limit for files this process writes (ulimit -f), when one of the database's
// files has reached it: 0 otherwise. A write past it fails with EFBIG (SIGXFSZ ignored).
rlim_t FileSizeLimitReached(const std::string& file) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_FSIZE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;
  constexpr rlim_t kLargestPage = 65536;  // a write SQLite makes is at most a page
  for (const char* suffix : {"", "-wal", "-journal"}) {
    struct stat st {};
    if (::stat((file + suffix).c_str(), &st) == 0 &&
        static_cast<rlim_t>(st.st_size) + kLargestPage > limit.rlim_cur) {
      return limit.rlim_cur;
    }
  }
  return 0;
}

}  // namespace

std::string DescribeFailure(sqlite3* db, int extended_code, const std::string& message) {
  if (ClassifySqliteCode(extended_code) != StoreErrorKind::kEnvironment) return message;
  const char* name = db != nullptr ? sqlite3_db_filename(db, "main") : nullptr;
  const std::string file = name != nullptr ? name : "";
  std::string out = file.empty() ? message : fmt::format("{}: {}", file, message);
  const int primary = extended_code & 0xff;
  if (primary != SQLITE_FULL && primary != SQLITE_IOERR) return out;
  const int os_error = db != nullptr ? LastSystemError(db) : 0;
  if (primary == SQLITE_FULL || os_error == ENOSPC || os_error == EDQUOT ||
      (!file.empty() && NoRoomOnDisk(file))) {
    return out + " (disk full: no room left to write it; free some space, or use a folder "
                 "with room: TMPDIR for temporary files, --db for a kept database)";
  }
  if (const rlim_t limit = file.empty() ? 0 : FileSizeLimitReached(file);
      limit != 0 || os_error == EFBIG) {
    return out + (limit != 0 ? fmt::format(" (file size limit reached: ulimit -f allows {} "
                                           "bytes; raise it)",
                                           limit)
                             : std::string(" (file size limit reached: raise ulimit -f)"));
  }
  if (os_error != 0) out += fmt::format(" ({})", std::strerror(os_error));
  return out;
}

}  // namespace dedupsim
