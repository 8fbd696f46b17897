#include "database.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "database_setup.h"
#include "schema.h"
#include "sqlite/error.h"
#include "sqlite/statement.h"
#include "sqlite/transaction.h"

namespace dedupsim {

namespace {

std::string Errno(int err) { return std::strerror(err); }

}  // namespace

void SetUpWithoutFsync(Connection& connection, bool temporary) {
  if (temporary) connection.ExecScript("PRAGMA synchronous=OFF");
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
  auto byte = [&](int i) { return static_cast<uint32_t>(static_cast<unsigned char>(header[static_cast<size_t>(i)])); };
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
      temporary_(std::exchange(other.temporary_, false)) {}

DatabaseFile::~DatabaseFile() {
  if (temporary_ && !path_.empty()) RemoveDatabaseFiles(path_);
}

DatabaseFile DatabaseFile::Open(const std::string& path, const DatabaseSettings& settings,
                                IfMissing if_missing) {
  if (path.empty()) throw DatabaseError("--db: empty path");
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw DatabaseError(fmt::format("{}: is a directory", path));
    if (!S_ISREG(st.st_mode)) throw DatabaseError(fmt::format("{}: not a regular file", path));
    CheckIsDedupsimDatabase(path);
    DatabaseFile db(path, settings, false);
    db.Configure();
    db.Upgrade();
    return db;
  }
  if (errno != ENOENT) throw DatabaseError(fmt::format("{}: {}", path, Errno(errno)));
  if (if_missing == IfMissing::kFail) {
    throw DatabaseError(fmt::format("{}: no such file (it is not created here)", path));
  }
  // SQLite would take a leftover journal or WAL as part of the new database: refuse, and
  // leave them for whoever made them.
  for (const char* suffix : {"-wal", "-journal"}) {
    if (stat((path + suffix).c_str(), &st) == 0) {
      throw DatabaseError(fmt::format("{}{} exists without {}: not creating a database there",
                                      path, suffix, path));
    }
  }
  // No file: create it ourselves, exclusively, so we only ever initialise our own file.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw DatabaseError(fmt::format("{}: cannot create: {}", path, Errno(errno)));
  ::close(fd);
  DatabaseFile db(path, settings, false);
  try {
    db.Initialise();
    db.Configure();
  } catch (...) {
    RemoveDatabaseFiles(path);  // we created it a moment ago
    throw;
  }
  return db;
}

DatabaseFile DatabaseFile::CreateTemporary(const DatabaseSettings& settings) {
  const char* dir = std::getenv("TMPDIR");
  std::string pattern = fmt::format("{}/dedupsim-XXXXXX.db", dir && *dir ? dir : "/tmp");
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  int fd = mkstemps(buffer.data(), 3);
  if (fd < 0) throw DatabaseError(fmt::format("cannot create a temporary database in {}: {}", pattern, Errno(errno)));
  ::close(fd);
  DatabaseFile db(std::string(buffer.data()), settings, true);
  db.Initialise();
  db.Configure();
  return db;
}

void DatabaseFile::Initialise() {
  ConnectionOptions options;
  options.busy_timeout = settings_.busy_timeout;
  Connection connection(path_, options);
  SetUpWithoutFsync(connection, temporary_);
  // Before WAL is on, the rollback journal of a temporary file's set-up stays in memory.
  if (temporary_) connection.ExecScript("PRAGMA journal_mode=MEMORY");
  // The marker and the schema go in before WAL is switched on, so they are in the main
  // file itself and a later header check finds them even if no checkpoint ever runs.
  connection.ExecScript(fmt::format("PRAGMA application_id={}", static_cast<int32_t>(kApplicationId)));
  CreateSchema(connection);
}

void DatabaseFile::Configure() {
  ConnectionOptions options;
  options.busy_timeout = std::min(settings_.busy_timeout, std::chrono::milliseconds(2000));
  Connection connection(path_, options);
  try {
    SetUpWithoutFsync(connection, temporary_);
    connection.ApplyPragmas(settings_.journal, settings_.synchronous);
    // Probe for a writer elsewhere now, so a held lock is one clear error, not a failure
    // halfway through a scenario.
    Transaction probe(connection, TransactionKind::kImmediate);
    probe.Rollback();
  } catch (const SqliteError& e) {
    if (e.IsBusy()) {
      throw DatabaseError(fmt::format("{}: database is locked by another process", path_));
    }
    throw DatabaseError(fmt::format("{}: {}", path_, e.what()));
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
    throw DatabaseError(fmt::format("{}: {}", path_, e.what()));
  }
}

Connection DatabaseFile::Connect() const {
  ConnectionOptions options;
  options.busy_timeout = settings_.busy_timeout;
  Connection connection(path_, options);
  connection.ExecScript(fmt::format("PRAGMA synchronous={}", ToString(settings_.synchronous)));
  return connection;
}

void RemoveDatabaseFiles(const std::string& path) noexcept {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    std::string name = path + suffix;
    ::unlink(name.c_str());
  }
}

}  // namespace dedupsim
