// A second SQLite file that stands for a system outside the inventory database: the cache
// of cache-arbiter, the email provider of email-reconcile. It lives next to the main
// database (its path plus a suffix, e.g. "inventory.db.cache"), is created when a scenario
// starts and removed, with its -wal, -shm and -journal files, when the SideStore is
// destroyed in the process that created it (a forked child that ends never removes it).
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
#include <string>
#include <string_view>
#include <vector>

#include "sqlite/connection.h"
#include "sqlite/database.h"

namespace dedupsim {

class KeptConnection;

inline constexpr uint32_t kSideStoreApplicationId = 0x64647373;  // "ddss"

// The side stores' suffixes: the dedup cache (world/dedup_cache.h) and the email
// provider (world/email_provider.h) next to the main database.
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

class SideStore {
 public:
  // Creates the store at home.base + suffix and runs schema (CREATE TABLE ...) in it.
  static SideStore CreateIn(const SideStoreHome& home, std::string_view suffix,
                            const std::string& schema);
  // CreateIn(HomeBeside(main), suffix, schema).
  static SideStore CreateNextTo(const DatabaseFile& main, std::string_view suffix,
                                const std::string& schema);
  ~SideStore();
  SideStore(SideStore&&) noexcept;
  SideStore& operator=(SideStore&&) = delete;
  SideStore(const SideStore&) = delete;
  SideStore& operator=(const SideStore&) = delete;

  // A new connection with the main database's busy timeout and synchronous level. Safe in
  // a child after fork.
  Connection Connect() const;
  const std::string& path() const { return path_; }

 private:
  SideStore(std::string path, std::chrono::milliseconds busy_timeout, Synchronous synchronous);

  std::string path_;
  std::chrono::milliseconds busy_timeout_;
  Synchronous synchronous_;
  int owner_pid_;  // only this process removes the files
  // The connection that made the store, kept open and idle so that each lesson connection
  // finds the log's index in memory; closed before fork() (and not reopened after).
  std::unique_ptr<KeptConnection> kept_;
};

}  // namespace dedupsim
