// SQLite's side stores (store/side_store.h): each a second SQLite file that stands for a
// system outside the inventory database: the cache of cache-arbiter, the email provider of
// email-reconcile, on either backend of the inventory database. It lives next to the main
// database (its path plus a suffix, e.g. "inventory.db.cache"), or in a folder of its own
// on a server run, is created when a scenario starts and removed, with its -wal, -shm and
// -journal files, when the SideStoreFile is destroyed in the process that created it (a
// forked child that ends never removes it).
//
// Like DatabaseFile it only ever touches its own files: it is marked with its own
// application_id, and a file at its path that does not carry that mark is refused with a
// DatabaseError, untouched, as is a -wal, -shm or -journal (or a symlink so named) at its
// path when the store itself is absent. A store of ours left behind by a killed run is
// replaced, with its companions. The files are registered with run_files, so an interrupt
// removes them.
//
// The connection that creates a store stays open, idle, until the store is destroyed or a
// fork closes it (KeptConnection): the lesson's connections to the store open against an
// index of its log already in memory, as they do on a run's temporary database.
//
// Writes to a side store can never join a transaction of the inventory database: that is
// the point of the lessons that use one.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sqlite/connection.h"
#include "sqlite/database.h"
#include "store/side_store.h"

namespace dedupsim {

class KeptConnection;

inline constexpr uint32_t kSideStoreApplicationId = 0x64647373;  // "ddss"

// The side stores' suffixes: the dedup cache and the email provider next to the main
// database.
inline constexpr const char* kDedupCacheSuffix = ".cache";
inline constexpr const char* kEmailProviderSuffix = ".provider";

// Every file a run on the database at db_path may use: the database, its -wal, -shm and
// -journal, and each side store (".cache", ".provider") with its own companions.
std::vector<std::string> FilesOfDatabase(const std::string& db_path);

// Where a run's side stores live: a base path (a store is base + its suffix) and the
// settings their connections take.
struct SideStoreHome {
  std::string base;
  std::chrono::milliseconds busy_timeout{5000};
  Synchronous synchronous = Synchronous::kNormal;
};

// Beside a SQLite run's database: base is its path, the settings are its settings.
SideStoreHome HomeBeside(const DatabaseFile& main);

// A home for the side stores of a run on a server database (PostgreSQL), which has no
// SQLite file for them to sit beside: a private folder (mode 0700, in $TMPDIR, or /tmp)
// made when this object is, holding nothing but the side stores (base "FOLDER/run"), and
// removed with them when it is destroyed in the process that made it, or on interrupt
// (run_files). Throws DatabaseError when the folder cannot be made.
class SideStoreFolder {
 public:
  explicit SideStoreFolder(const DatabaseSettings& settings);
  ~SideStoreFolder();
  SideStoreFolder(const SideStoreFolder&) = delete;
  SideStoreFolder& operator=(const SideStoreFolder&) = delete;

  SideStoreHome home() const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  DatabaseSettings settings_;
  int owner_pid_;
};

class SideStoreFile {
 public:
  // Creates the store at home.base + suffix and runs schema (CREATE TABLE ...) in it.
  static SideStoreFile CreateIn(const SideStoreHome& home, std::string_view suffix,
                                const std::string& schema);
  // CreateIn(HomeBeside(main), suffix, schema).
  static SideStoreFile CreateNextTo(const DatabaseFile& main, std::string_view suffix,
                                    const std::string& schema);
  // The store of kind (not kNone) in home: its suffix and its tables (sqlite/side_records.h).
  static SideStoreFile Create(const SideStoreHome& home, SideStoreKind kind);
  ~SideStoreFile();
  SideStoreFile(SideStoreFile&&) noexcept;
  SideStoreFile& operator=(SideStoreFile&&) = delete;
  SideStoreFile(const SideStoreFile&) = delete;
  SideStoreFile& operator=(const SideStoreFile&) = delete;

  // A new connection with the main database's busy timeout and synchronous level. Safe in
  // a child after fork.
  Connection Connect() const;
  const std::string& path() const { return path_; }

 private:
  SideStoreFile(std::string path, std::chrono::milliseconds busy_timeout, Synchronous synchronous);

  std::string path_;
  std::chrono::milliseconds busy_timeout_;
  Synchronous synchronous_;
  int owner_pid_;  // only this process removes the files
  // The connection that made the store, kept open and idle so that each lesson connection
  // finds the log's index in memory; closed before fork() (and not reopened after).
  std::unique_ptr<KeptConnection> kept_;
};

// A side store (store/side_store.h) in its file: each Open is a new connection to it, whose
// records are SqliteSideRecords.
class SqliteSideStore final : public SideStore {
 public:
  explicit SqliteSideStore(SideStoreFile file) : file_(std::move(file)) {}
  std::unique_ptr<SideRecords> Open(Recorder* recorder = nullptr,
                                    const std::string& instance = "") const override;
  const SideStoreFile& file() const { return file_; }

 private:
  SideStoreFile file_;
};

// Where a run's side stores go (store/side_store.h): beside a SQLite run's database, or, on
// a run on a server database, which has no SQLite file for them to sit beside, in a
// SideStoreFolder made when a lesson first creates one (a run that never does makes none)
// and removed with this object. One thread at a time.
class SqliteSideStores final : public SideStores {
 public:
  // Beside main: its path and its settings.
  explicit SqliteSideStores(const DatabaseFile& main) : main_(&main) {}
  // A run on a server: side stores with these settings, in a folder of their own.
  explicit SqliteSideStores(DatabaseSettings settings) : settings_(settings) {}

  std::unique_ptr<SideStore> Create(SideStoreKind kind) override;
  // Its files' tables (sqlite/table_probe.h).
  std::unique_ptr<TablesReader> OpenTablesReader() const override;

 private:
  const DatabaseFile* main_ = nullptr;
  DatabaseSettings settings_;
  std::optional<SideStoreFolder> folder_;
};

}  // namespace dedupsim
