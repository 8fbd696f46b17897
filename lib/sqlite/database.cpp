#include "sqlite/database.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "os/pause_point.h"
#include "os/run_files.h"
#include "sqlite/database_setup.h"
#include "sqlite/error.h"
#include "sqlite/kept_connection.h"
#include "sqlite/schema.h"
#include "sqlite/statement.h"
#include "sqlite/transaction.h"

namespace dedupsim {

namespace {

std::string Errno(int err) { return std::strerror(err); }

}  // namespace

void SetUpWithoutFsync(Connection& connection, bool temporary) {
  if (!temporary) return;
  // The log is checkpointed, unsynced, and the set-up's own writes start a new log (its
  // header written at synchronous OFF): the lesson that follows finds only this set-up's
  // frames in the log, and its own first commit appends to a log that exists instead of
  // starting one (which syncs its header at the lesson's level). PASSIVE: never waits.
  // journal_size_limit 0: the set-up's first commit into the new log cuts the file to its
  // own frames, so the log's size is this lesson's, whatever ran before.
  // Cached: a run's kept set-up connection does this before every lesson's restock.
  for (const char* sql : {"PRAGMA synchronous=OFF", "PRAGMA journal_size_limit=0",
                          "PRAGMA wal_checkpoint(PASSIVE)"}) {
    connection.Cached(sql).Execute();
  }
}

void CheckIsDedupsimDatabase(const std::string& path) {
  CheckApplicationId(path, kApplicationId, "dedupsim database");
}

void CheckApplicationId(const std::string& path, uint32_t application_id, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DatabaseError(fmt::format("{}: cannot read: {}", path, Errno(errno)));
  std::array<char, 100> header{};
  in.read(header.data(), header.size());
  auto got = in.gcount();
  if (got == 0) throw DatabaseError(fmt::format("{}: empty file, not a {}", path, what));
  static constexpr char kMagic[] = "SQLite format 3";  // 16 bytes with its NUL
  if (got < 100 || std::memcmp(header.data(), kMagic, sizeof kMagic) != 0) {
    throw DatabaseError(fmt::format("{}: not an SQLite database", path));
  }
  auto byte = [&](int i) {
    return static_cast<uint32_t>(static_cast<unsigned char>(header[static_cast<size_t>(i)]));
  };
  uint32_t app_id = byte(68) << 24 | byte(69) << 16 | byte(70) << 8 | byte(71);
  if (app_id != application_id) {
    throw DatabaseError(fmt::format(
        "{}: an SQLite database of another application (application_id {:#x}), not a {}", path,
        app_id, what));
  }
}

DatabaseFile::DatabaseFile(std::string path, DatabaseSettings settings, bool temporary)
    : path_(std::move(path)), settings_(settings), temporary_(temporary) {}

DatabaseFile::DatabaseFile(DatabaseFile&& other) noexcept
    : path_(std::exchange(other.path_, std::string())),
      settings_(other.settings_),
      temporary_(std::exchange(other.temporary_, false)),
      lock_fd_(std::move(other.lock_fd_)),
      kept_(std::move(other.kept_)) {}

DatabaseFile::~DatabaseFile() {
  kept_.reset();  // the last connection closes before the files go
  if (temporary_ && !path_.empty()) {
    RemoveDatabaseFiles(path_);
    run_files::Forget(path_);
  }
  lock_fd_.reset();  // after every connection of this run closed
}

namespace {

// The pid that holds a flock on the file open as fd, read from /proc/locks; 0 if unknown.
long LockHolder(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return 0;
  std::ifstream locks("/proc/locks");
  std::string line;
  const std::string device =
      fmt::format("{:02x}:{:02x}:{} ", major(st.st_dev), minor(st.st_dev), st.st_ino);
  while (std::getline(locks, line)) {
    if (line.find("FLOCK") == std::string::npos || line.find(device) == std::string::npos) continue;
    std::istringstream fields(line);
    std::string id, kind, advisory, mode;
    long pid = 0;
    fields >> id >> kind >> advisory >> mode >> pid;
    if (pid > 0) return pid;
  }
  return 0;
}

// Takes the one-process-per-database lock on the file open as fd, or throws naming the
// process that holds it.
void LockOrRefuse(int fd, const std::string& path) {
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return;
  const int err = errno;
  if (err != EWOULDBLOCK) {
    throw DatabaseError(fmt::format("{}: cannot lock: {}", path, Errno(err)));
  }
  long pid = LockHolder(fd);
  std::string comm;
  std::ifstream(fmt::format("/proc/{}/comm", pid)) >> comm;
  if (pid > 0 && comm == "dedupsim") {
    throw DatabaseError(fmt::format("{}: in use by dedupsim pid {}", path, pid));
  }
  throw DatabaseError(pid > 0 ? fmt::format("{}: locked by another process (pid {})", path, pid)
                              : fmt::format("{}: locked by another process", path));
}

// A leftover -wal, -shm or -journal (or anything named like one, a symlink too) where a
// database is about to be created: SQLite would take it as part of the new database.
void RefuseCompanions(const std::string& path) {
  struct stat st {};
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    if (::lstat((path + suffix).c_str(), &st) == 0) {
      throw DatabaseError(
          fmt::format("{}{} exists without {}: not creating a database there", path, suffix, path));
    }
  }
}

}  // namespace

DatabaseFile DatabaseFile::Open(const std::string& path, const DatabaseSettings& settings,
                                IfMissing if_missing) {
  if (path.empty()) throw DatabaseError("the database path is empty");
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw DatabaseError(fmt::format("{}: is a directory", path));
    if (!S_ISREG(st.st_mode)) throw DatabaseError(fmt::format("{}: not a regular file", path));
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw DatabaseError(fmt::format("{}: cannot read: {}", path, Errno(errno)));
    DatabaseFile db(path, settings, false);
    db.lock_fd_.reset(fd);
    LockOrRefuse(fd, path);
    PauseHere("db-locked");
    CheckIsDedupsimDatabase(path);
    db.Configure();
    db.Upgrade();
    return db;
  }
  if (errno != ENOENT) throw DatabaseError(fmt::format("{}: {}", path, Errno(errno)));
  if (if_missing == IfMissing::kFail) {
    throw DatabaseError(fmt::format("{}: no such file (it is not created here)", path));
  }
  RefuseCompanions(path);
  return CreateNew(path, settings);
}

DatabaseFile DatabaseFile::CreateNew(const std::string& path, const DatabaseSettings& settings) {
  // Built under a temporary name in the same folder and renamed into place only once it
  // carries the marker and the schema: the final name is either absent or a complete
  // dedupsim database, whenever the run is stopped.
  int fd = -1;
  const std::string temp = run_files::CreateAndRegister(
      [&] {
        std::string pattern = TemporaryNameBeside(path, "new");
        std::vector<char> buffer(pattern.begin(), pattern.end());
        buffer.push_back('\0');
        fd = ::mkstemp(buffer.data());
        if (fd < 0) throw DatabaseError(fmt::format("{}: cannot create: {}", path, Errno(errno)));
        return std::string(buffer.data());
      },
      /*companions=*/true);
  DatabaseFile db(temp, settings, false);
  db.lock_fd_.reset(fd);
  ::flock(fd, LOCK_EX | LOCK_NB);  // a file nobody else knows yet
  auto discard = [&] {
    RemoveDatabaseFiles(temp);
    run_files::Forget(temp);
  };
  try {
    mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd, 0666 & ~mask);  // mkstemp made it 0600; a new database gets the usual mode
    PauseHere("new-db-created");
    db.Initialise();
  } catch (const DatabaseError& e) {
    discard();
    throw InDatabase(path, e);
  }
  if (::fsync(fd) != 0 ||
      ::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) != 0) {
    const int err = errno;
    discard();
    if (err == EEXIST) {
      throw DatabaseError(
          fmt::format("{}: created by another process meanwhile; left as it is", path));
    }
    throw DatabaseError(fmt::format("{}: cannot create: {}", path, Errno(err)));
  }
  run_files::Forget(temp);
  db.path_ = path;
  db.Configure();
  return db;
}

DatabaseFile DatabaseFile::CreateTemporary(const DatabaseSettings& settings,
                                           SetUpConnection set_up) {
  const char* dir = std::getenv("TMPDIR");
  std::string pattern = fmt::format("{}/dedupsim-XXXXXX.db", dir && *dir ? dir : "/tmp");
  const std::string path = run_files::CreateAndRegister(
      [&] {
        std::vector<char> buffer(pattern.begin(), pattern.end());
        buffer.push_back('\0');
        int fd = mkstemps(buffer.data(), 3);
        if (fd < 0) {
          throw DatabaseError(
              fmt::format("cannot create a temporary database in {}: {}", pattern, Errno(errno)));
        }
        ::close(fd);
        return std::string(buffer.data());
      },
      /*companions=*/true);
  DatabaseFile db(path, settings, true);
  PauseHere("temporary-db-created");
  try {
    Connection connection = db.SetUpTemporary();
    if (set_up == SetUpConnection::kKeep && settings.journal == JournalMode::kWal) {
      db.kept_ = std::make_unique<KeptConnection>(std::move(connection));
    }
  } catch (const DatabaseError& e) {  // SqliteError too
    throw InDatabase(path, e);
  }
  return db;
}

// A file this process has just made with mkstemps: nobody else knows it, so no probe for
// another writer. The marker and the schema are written with the rollback journal in
// memory, into the main file itself, then the journal mode is switched (still in memory:
// no journal file is created and deleted), all at synchronous OFF. The connection leaves
// the log and its index at close, as a lesson's does (Connect).
Connection DatabaseFile::SetUpTemporary() {
  ConnectionOptions options;
  options.busy_timeout = settings_.busy_timeout;
  Connection connection(path_, options);
  SetUpWithoutFsync(connection, true);
  connection.ExecScript("PRAGMA journal_mode=MEMORY");
  connection.ExecScript(
      fmt::format("PRAGMA application_id={}", static_cast<int32_t>(kApplicationId)));
  CreateSchema(connection);
  connection.ExecScript(settings_.journal == JournalMode::kWal ? "PRAGMA journal_mode=WAL"
                                                               : "PRAGMA journal_mode=DELETE");
  connection.SetCheckpointOnClose(false);
  return connection;
}

void DatabaseFile::WithSetUpConnection(const std::function<void(Connection&)>& f) const {
  if (kept_) {
    kept_->WithReopened([this] { return Connect(); },
                        [&](Connection& connection) {
                          SetUpWithoutFsync(connection, true);
                          f(connection);
                        });
    return;
  }
  Connection connection = Connect();
  SetUpWithoutFsync(connection, temporary_);
  f(connection);
}

void DatabaseFile::WithReadConnection(const std::function<void(Connection&)>& f) const {
  if (kept_ && kept_->WithIfOpen(f)) return;
  Connection connection = Connect();
  f(connection);
}

void DatabaseFile::Initialise() {
  ConnectionOptions options;
  options.busy_timeout = settings_.busy_timeout;
  Connection connection(path_, options);
  // The marker and the schema go in before WAL is switched on, so they are in the main
  // file itself and a later header check finds them even if no checkpoint ever runs.
  connection.ExecScript(
      fmt::format("PRAGMA application_id={}", static_cast<int32_t>(kApplicationId)));
  CreateSchema(connection);
}

void DatabaseFile::Configure() {
  ConnectionOptions options;
  options.busy_timeout = std::min(settings_.busy_timeout, std::chrono::milliseconds(2000));
  Connection connection(path_, options);
  try {
    connection.ApplyPragmas(settings_.journal, settings_.synchronous);
    // Probe for a writer elsewhere now, so a held lock is one clear error, not a failure
    // halfway through a scenario.
    Transaction probe(connection, TransactionKind::kImmediate);
    probe.Rollback();
  } catch (const SqliteError& e) {
    if (e.IsBusy()) {
      throw DatabaseError(fmt::format("{}: database is locked by another process", path_));
    }
    throw InDatabase(path_, e);
  }
}

void DatabaseFile::Upgrade() {
  ConnectionOptions options;
  options.busy_timeout = settings_.busy_timeout;
  Connection connection(path_, options);
  try {
    UpgradeSchema(connection);
  } catch (const SqliteError& e) {
    throw DatabaseError(fmt::format("{}: schema upgrade failed: {}", path_, e.what()));
  } catch (const DatabaseError& e) {
    throw InDatabase(path_, e);
  }
  if (auto difference = SchemaDifference(connection)) {
    throw DatabaseError(fmt::format("{}: {}", path_, *difference));
  }
}

Connection DatabaseFile::Connect() const {
  ConnectionOptions options;
  options.busy_timeout = settings_.busy_timeout;
  Connection connection(path_, options);
  connection.ExecScript(fmt::format("PRAGMA synchronous={}", ToString(settings_.synchronous)));
  // A temporary database's log is not checkpointed each time its last connection closes
  // (a checkpoint syncs the log and the file, and the -wal and -shm are deleted and made
  // again by the next open): the next connection reads the log as it is. The lesson's own
  // transactions and commits are unchanged; the next set-up connection (SetUpWithoutFsync)
  // checkpoints without syncing and starts a new log, and the files are removed at the end
  // of the run.
  if (temporary_) connection.SetCheckpointOnClose(false);
  return connection;
}

DatabaseError InDatabase(const std::string& path, const std::exception& e) {
  std::string what = e.what();
  if (what.find(path) != std::string::npos) return DatabaseError(what);
  return DatabaseError(fmt::format("{}: {}", path, what));
}

void RemoveDatabaseFiles(const std::string& path) noexcept {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    std::string name = path + suffix;
    ::unlink(name.c_str());
  }
}

}  // namespace dedupsim
