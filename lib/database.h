// A dedupsim database file on disk. Open() accepts only a file dedupsim created (marked
// with PRAGMA application_id) or, unless told not to, a path where no file exists yet;
// anything else is refused with a DatabaseError before SQLite touches it, so a user's file
// is never changed. A dedupsim database of an older schema version is upgraded on open;
// one whose tables someone altered (columns, indexes, triggers) is refused.
//
// A kept database is used by one dedupsim process at a time: Open takes an exclusive
// flock on the file itself for the object's lifetime (independent of SQLite's fcntl
// locks on Linux) and refuses a file another process holds ("in use by dedupsim pid N").
// A new one is built under a temporary name beside it and renamed into place (never over
// an existing file) once it carries the marker and the schema.
// A temporary database is removed, with its -wal, -shm and -journal files, on destruction;
// temporary files are registered with run_files so an interrupt removes them too.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "sqlite/connection.h"
#include "sqlite/error.h"

namespace dedupsim {

inline constexpr uint32_t kApplicationId = 0x64647331;  // "dds1"

struct DatabaseSettings {
  JournalMode journal = JournalMode::kWal;
  Synchronous synchronous = Synchronous::kNormal;
  std::chrono::milliseconds busy_timeout{5000};
};

// What Open does where no file exists.
enum class IfMissing { kCreate, kFail };

class DatabaseFile {
 public:
  // Opens the dedupsim database at path, or creates one where no file exists (kCreate).
  // Throws DatabaseError (the file untouched) for a directory, a missing or unwritable
  // folder, a file that is not a dedupsim database, a database another process holds
  // locked, a schema newer than this dedupsim's, or (kFail) a missing file.
  static DatabaseFile Open(const std::string& path, const DatabaseSettings& settings,
                           IfMissing if_missing = IfMissing::kCreate);
  // Creates a fresh database in $TMPDIR (or /tmp), removed when this object is destroyed.
  static DatabaseFile CreateTemporary(const DatabaseSettings& settings);

  ~DatabaseFile();
  DatabaseFile(DatabaseFile&&) noexcept;
  DatabaseFile& operator=(DatabaseFile&&) = delete;
  DatabaseFile(const DatabaseFile&) = delete;
  DatabaseFile& operator=(const DatabaseFile&) = delete;

  // A new connection with the settings' busy timeout and synchronous level. Safe to call in
  // a child process after fork.
  Connection Connect() const;

  const std::string& path() const { return path_; }
  bool temporary() const { return temporary_; }
  const DatabaseSettings& settings() const { return settings_; }

 private:
  DatabaseFile(std::string path, DatabaseSettings settings, bool temporary);
  void Initialise();  // schema and marker on a file dedupsim has just created
  void Configure();   // journal mode, then a probe for a lock held elsewhere
  void Upgrade();     // an existing file: bring its schema to kSchemaVersion, then check it
  static DatabaseFile CreateNew(const std::string& path, const DatabaseSettings& settings);

  std::string path_;
  DatabaseSettings settings_;
  bool temporary_;
  int lock_fd_ = -1;  // holds the flock that keeps other dedupsim processes out
};

// The error e, its message prefixed with the database path unless it names it already:
// every database error a command prints names the file.
DatabaseError InDatabase(const std::string& path, const std::exception& e);

// A mkstemp pattern for a temporary file beside path: ".NAME.TAG-XXXXXX" in path's folder,
// or ".dedupsim-TAG-XXXXXX" when that would be longer than the folder allows a name.
std::string TemporaryNameBeside(const std::string& path, std::string_view tag);

// Removes path and its -wal, -shm and -journal companions; ignores missing files.
void RemoveDatabaseFiles(const std::string& path) noexcept;

// Reads the SQLite header of path without opening it through SQLite. Throws DatabaseError
// with a one-line reason unless it is a dedupsim database.
void CheckIsDedupsimDatabase(const std::string& path);

// The same check for any application id; `what` names the expected kind in the message
// ("dedupsim database", "dedupsim side store").
void CheckApplicationId(const std::string& path, uint32_t application_id, const char* what);

}  // namespace dedupsim
