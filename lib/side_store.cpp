#include "side_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "sqlite/error.h"

namespace dedupsim {

SideStore::SideStore(std::string path, std::chrono::milliseconds busy_timeout)
    : path_(std::move(path)), busy_timeout_(busy_timeout), owner_pid_(static_cast<int>(getpid())) {}

SideStore::SideStore(SideStore&& other) noexcept
    : path_(std::exchange(other.path_, std::string())),
      busy_timeout_(other.busy_timeout_),
      owner_pid_(other.owner_pid_) {}

SideStore::~SideStore() {
  if (!path_.empty() && owner_pid_ == static_cast<int>(getpid())) RemoveDatabaseFiles(path_);
}

SideStore SideStore::CreateNextTo(const DatabaseFile& main, std::string_view suffix,
                                  const std::string& schema) {
  std::string path = main.path() + std::string(suffix);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) throw DatabaseError(fmt::format("{}: not a regular file", path));
    CheckApplicationId(path, kSideStoreApplicationId, "dedupsim side store");
    RemoveDatabaseFiles(path);  // ours, left by a run that did not end cleanly
  } else if (errno != ENOENT) {
    throw DatabaseError(fmt::format("{}: {}", path, std::strerror(errno)));
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw DatabaseError(fmt::format("{}: cannot create: {}", path, std::strerror(errno)));
  ::close(fd);
  SideStore store(path, main.settings().busy_timeout);
  Connection connection = store.Connect();
  // The mark goes in before WAL, so it is in the main file's header at once.
  connection.ExecScript(
      fmt::format("PRAGMA application_id={}", static_cast<int32_t>(kSideStoreApplicationId)));
  connection.ExecScript(schema);
  connection.ApplyPragmas(JournalMode::kWal, Synchronous::kNormal);
  return store;
}

Connection SideStore::Connect() const {
  ConnectionOptions options;
  options.busy_timeout = busy_timeout_;
  return Connection(path_, options);
}

}  // namespace dedupsim
