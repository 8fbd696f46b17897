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
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "os/unique_fd.h"
#include "sqlite/connection.h"
#include "sqlite/error.h"
#include "store/database_settings.h"
#include "store/store.h"

namespace dedupsim {

class KeptConnection;

inline constexpr uint32_t kApplicationId = 0x64647331;  // "dds1"

// DatabaseSettings (journal, synchronous, busy timeout): store/database_settings.h.

// What CreateTemporary does with its set-up connection once the file is ready. kKeep (a
// WAL database only): dedupsim keeps it open, idle, for its own set-up and read-backs
// (WithSetUpConnection, WithReadConnection), so the lesson's connections find the log's
// index in memory instead of rebuilding it from the log at each open, and a restock or a
// read-back opens no connection of its own. Closed before every fork() (a child never
// inherits an open connection) and reopened by the next set-up only: a dead child's log
// is recovered by the next connection the lesson opens, as without it.
enum class SetUpConnection { kClose, kKeep };

class DatabaseFile {
 public:
  // Opens the dedupsim database at path, or creates one where no file exists (kCreate).
  // Throws DatabaseError (the file untouched) for a directory, a missing or unwritable
  // folder, a file that is not a dedupsim database, a database another process holds
  // locked, a schema newer than this dedupsim's, or (kFail) a missing file.
  static DatabaseFile Open(const std::string& path, const DatabaseSettings& settings,
                           IfMissing if_missing = IfMissing::kCreate);
  // Creates a fresh database in $TMPDIR (or /tmp), removed when this object is destroyed.
  static DatabaseFile CreateTemporary(const DatabaseSettings& settings,
                                      SetUpConnection set_up = SetUpConnection::kClose);

  ~DatabaseFile();
  DatabaseFile(DatabaseFile&&) noexcept;
  DatabaseFile& operator=(DatabaseFile&&) = delete;
  DatabaseFile(const DatabaseFile&) = delete;
  DatabaseFile& operator=(const DatabaseFile&) = delete;

  // A new connection with the settings' busy timeout and synchronous level. Safe to call in
  // a child process after fork.
  Connection Connect() const;

  // dedupsim's own set-up (a restock, more stock), not a lesson's step: f runs on the kept
  // set-up connection (SetUpConnection::kKeep; reopened if a fork closed it), or else on a
  // new connection; either way after SetUpWithoutFsync (database_setup.h).
  void WithSetUpConnection(const std::function<void(Connection&)>& f) const;
  // dedupsim's own read-back (untraced): on the kept set-up connection while it is open,
  // or else on a new connection. Never reopens the kept one (after a fork the lesson's
  // next connection, not dedupsim's, recovers what a dead child left).
  void WithReadConnection(const std::function<void(Connection&)>& f) const;

  const std::string& path() const { return path_; }
  bool temporary() const { return temporary_; }
  const DatabaseSettings& settings() const { return settings_; }

 private:
  DatabaseFile(std::string path, DatabaseSettings settings, bool temporary);
  void Initialise();  // schema and marker on a new kept file (--db), made durably
  void Configure();   // journal mode, then a probe for a lock held elsewhere
  void Upgrade();     // an existing file: bring its schema to kSchemaVersion, then check it
  static DatabaseFile CreateNew(const std::string& path, const DatabaseSettings& settings);
  Connection SetUpTemporary();  // marker, schema and journal mode in one connection

  std::string path_;
  DatabaseSettings settings_;
  bool temporary_;
  UniqueFd lock_fd_;            // holds the flock that keeps other dedupsim processes out
  std::unique_ptr<KeptConnection> kept_;  // SetUpConnection::kKeep only: closed before fork()
};

// The error e, its message prefixed with the database path unless it names it already:
// every database error a command prints names the file.
DatabaseError InDatabase(const std::string& path, const std::exception& e);

// Removes path and its -wal, -shm and -journal companions; ignores missing files.
void RemoveDatabaseFiles(const std::string& path) noexcept;

// Reads the SQLite header of path without opening it through SQLite. Throws DatabaseError
// with a one-line reason unless it is a dedupsim database.
void CheckIsDedupsimDatabase(const std::string& path);

// The same check for any application id; `what` names the expected kind in the message
// ("dedupsim database", "dedupsim side store").
void CheckApplicationId(const std::string& path, uint32_t application_id, const char* what);

// The SQLite database a backend runs on, for what only SQLite files do (a lesson's own
// connection, the files a dead child left). A run on a server has none: throws
// std::logic_error (a lesson that asks for one there is dedupsim's bug, and would leave an
// unused file).
const DatabaseFile& SqliteFileOf(const Backend& backend);

}  // namespace dedupsim
