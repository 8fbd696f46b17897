#include "sqlite/side_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "os/run_files.h"
#include "sqlite/error.h"
#include "sqlite/kept_connection.h"
#include "sqlite/side_records.h"
#include "sqlite/table_probe.h"

namespace dedupsim {

std::vector<std::string> FilesOfDatabase(const std::string& db_path) {
  std::vector<std::string> files;
  for (const char* store : {"", kDedupCacheSuffix, kEmailProviderSuffix}) {
    for (const char* companion : {"", "-wal", "-shm", "-journal"}) {
      files.push_back(db_path + store + companion);
    }
  }
  return files;
}

SideStoreFile::SideStoreFile(std::string path, std::chrono::milliseconds busy_timeout,
                     Synchronous synchronous)
    : path_(std::move(path)),
      busy_timeout_(busy_timeout),
      synchronous_(synchronous),
      owner_pid_(static_cast<int>(getpid())) {}

SideStoreFile::SideStoreFile(SideStoreFile&& other) noexcept
    : path_(std::exchange(other.path_, std::string())),
      busy_timeout_(other.busy_timeout_),
      synchronous_(other.synchronous_),
      owner_pid_(other.owner_pid_),
      kept_(std::move(other.kept_)) {}

SideStoreFile::~SideStoreFile() {
  kept_.reset();  // the last connection closes before the files go
  if (!path_.empty() && owner_pid_ == static_cast<int>(getpid())) {
    RemoveDatabaseFiles(path_);  // every file at these names is this run's (see CreateNextTo)
    run_files::Forget(path_);
  }
}

SideStoreHome HomeBeside(const DatabaseFile& main) {
  return {main.path(), main.settings().busy_timeout, main.settings().synchronous};
}

SideStoreFolder::SideStoreFolder(const DatabaseSettings& settings)
    : settings_(settings), owner_pid_(static_cast<int>(getpid())) {
  const char* dir = std::getenv("TMPDIR");
  const std::string pattern = fmt::format("{}/dedupsim-side-XXXXXX", dir && *dir ? dir : "/tmp");
  // Registered in the step that makes it: on interrupt the folder goes with what is in it
  // (side stores of this run only: nobody else knows its name, and its mode keeps others
  // out). The stores' own registrations then find their files gone.
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) {
    throw DatabaseError(fmt::format("cannot create a folder for the side stores in {}: {}",
                                    pattern, std::strerror(errno)));
  }
  path_ = buffer.data();
  const std::string folder = path_;
  run_files::RegisterCleanup(folder, [folder] {
    std::error_code ignored;
    std::filesystem::remove_all(folder, ignored);
  });
}

SideStoreFolder::~SideStoreFolder() {
  if (owner_pid_ != static_cast<int>(getpid())) return;
  run_files::ForgetCleanup(path_);
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

SideStoreHome SideStoreFolder::home() const {
  return {path_ + "/run", settings_.busy_timeout, settings_.synchronous};
}

SideStoreFile SideStoreFile::CreateNextTo(const DatabaseFile& main, std::string_view suffix,
                                  const std::string& schema) {
  return CreateIn(HomeBeside(main), suffix, schema);
}

SideStoreFile SideStoreFile::CreateIn(const SideStoreHome& home, std::string_view suffix,
                              const std::string& schema) {
  std::string path = home.base + std::string(suffix);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw DatabaseError(fmt::format("{}: is a directory", path));
    if (!S_ISREG(st.st_mode)) throw DatabaseError(fmt::format("{}: not a regular file", path));
    // A store of ours left by a run that was killed: with its companions, which SQLite
    // would take as part of it, it is removed (only the kill leaves one; an interrupt
    // removes it).
    CheckApplicationId(path, kSideStoreApplicationId, "dedupsim side store");
    RemoveDatabaseFiles(path);
  } else if (errno != ENOENT) {
    throw DatabaseError(fmt::format("{}: {}", path, std::strerror(errno)));
  } else {
    // No store: a -wal, -shm or -journal at its name (a symlink too) is someone else's.
    for (const char* companion : {"-wal", "-shm", "-journal"}) {
      if (::lstat((path + companion).c_str(), &st) == 0) {
        throw DatabaseError(fmt::format("{}{} exists without {}: not creating a side store there",
                                        path, companion, path));
      }
    }
  }
  run_files::CreateAndRegister(
      [&] {
        int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0) {
          throw DatabaseError(fmt::format("{}: cannot create: {}", path, std::strerror(errno)));
        }
        ::close(fd);
        return path;
      },
      /*companions=*/true);
  SideStoreFile store(path, home.busy_timeout, home.synchronous);
  try {
    Connection connection = store.Connect();
    // A store lives for this run only (removed at its end): its set-up (mark, schema, the
    // switch to WAL, the checkpoint when this connection closes) runs without fsync, its
    // rollback journal before WAL in memory.
    connection.ExecScript("PRAGMA synchronous=OFF; PRAGMA journal_mode=MEMORY");
    connection.SetCheckpointOnClose(true);
    // The mark goes in before WAL, so it is in the main file's header at once.
    connection.ExecScript(
        fmt::format("PRAGMA application_id={}", static_cast<int32_t>(kSideStoreApplicationId)));
    connection.ExecScript(schema);
    connection.ApplyPragmas(JournalMode::kWal, Synchronous::kOff);
    // The log's first frame (the mark again), written here at synchronous OFF and left in
    // the log (no checkpoint when this connection closes): the lesson's first commit appends
    // to a log that exists instead of starting one, which would sync the log's header and
    // the folder. The connection is then kept open, idle, for the store's lifetime.
    connection.SetCheckpointOnClose(false);
    connection.ExecScript(
        fmt::format("PRAGMA application_id={}", static_cast<int32_t>(kSideStoreApplicationId)));
    store.kept_ = std::make_unique<KeptConnection>(std::move(connection));
  } catch (const std::exception& e) {
    throw InDatabase(path, e);
  }
  return store;
}

SideStoreFile SideStoreFile::Create(const SideStoreHome& home, SideStoreKind kind) {
  switch (kind) {
    case SideStoreKind::kCache:
      return CreateIn(home, kDedupCacheSuffix, SideStoreTables(kind));
    case SideStoreKind::kEmailProvider:
      return CreateIn(home, kEmailProviderSuffix, SideStoreTables(kind));
    case SideStoreKind::kNone:
      break;
  }
  throw std::logic_error("internal: a side store of no kind");
}

std::unique_ptr<SideRecords> SqliteSideStore::Open(Recorder* recorder,
                                                   const std::string& instance) const {
  Connection connection = file_.Connect();
  if (recorder != nullptr) connection.SetTrace(recorder, instance);
  return std::make_unique<SqliteSideRecords>(std::move(connection));
}

std::unique_ptr<SideStore> SqliteSideStores::Create(SideStoreKind kind) {
  if (main_ != nullptr) {
    return std::make_unique<SqliteSideStore>(SideStoreFile::Create(HomeBeside(*main_), kind));
  }
  if (!folder_) folder_.emplace(settings_);
  return std::make_unique<SqliteSideStore>(SideStoreFile::Create(folder_->home(), kind));
}

std::unique_ptr<TablesReader> SqliteSideStores::OpenTablesReader() const {
  std::string base;
  if (main_ != nullptr) {
    base = main_->path();
  } else if (folder_) {
    base = folder_->home().base;
  } else {
    return nullptr;
  }
  return std::make_unique<TableProbe>(std::vector<std::pair<std::string, std::string>>{
      {"cache", base + kDedupCacheSuffix}, {"email provider", base + kEmailProviderSuffix}});
}

Connection SideStoreFile::Connect() const {
  ConnectionOptions options;
  options.busy_timeout = busy_timeout_;
  Connection connection(path_, options);
  // Commits at the run's synchronous level, as the main database's (DatabaseFile::Connect):
  // SQLite's default (FULL) would sync the log at every commit of a store that stands for
  // a cache or a provider, an fsync no lesson asks for (with WAL and the default NORMAL, a
  // commit survives the process's death, which is what the lessons crash). The store's log
  // is read by the next connection, not checkpointed and deleted each time the last one
  // closes (as for a temporary database).
  connection.ExecScript(fmt::format("PRAGMA synchronous={}", ToString(synchronous_)));
  connection.SetCheckpointOnClose(false);
  return connection;
}

}  // namespace dedupsim
