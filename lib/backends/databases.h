// The one place where what a command line chose for its database (store/databases.h's
// DatabaseChoice) becomes a backend's: the Databases of a workload (SQLite's files,
// sqlite/workload_database.h, or PostgreSQL's schema, postgres/workload_database.h), or the
// LessonDatabase a run of lessons works on. Everything above asks what these return and
// names neither backend.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "store/database_settings.h"
#include "store/databases.h"
#include "store/error.h"
#include "store/explore_database.h"
#include "store/file_databases.h"
#include "store/side_store.h"
#include "store/store.h"

namespace dedupsim {

// Opens what choice names: for PostgreSQL, starts a throwaway cluster (unless choice.dsn
// names a server) and opens dedupsim's schema. Throws DatabaseError when it cannot (a
// server that does not start or answer, a schema not dedupsim's), std::invalid_argument for
// a backend that is neither "sqlite" nor "postgres".
std::unique_ptr<Databases> OpenDatabases(const DatabaseChoice& choice);

// Every file a run on the database choice names may use: SQLite's kept file (choice.path),
// its -wal, -shm and -journal, and each side store with its own companions; none for new
// temporary files or a server.
std::vector<std::string> FilesOfDatabase(const DatabaseChoice& choice);

// Runs f on a store of the existing database choice names (a command's own step, untraced:
// the cleanup), creating nothing: SQLite's file (choice.path) and PostgreSQL's schema
// (choice.dsn: a server of the user's; no throwaway cluster) must exist and be dedupsim's.
// Throws DatabaseError when they do not, or when f's statements fail: SQLite's naming the
// file.
void WithExistingStore(const DatabaseChoice& choice, const std::function<void(Store&)>& f);

// The server `check` grades each consumer file on in a database and role of its own
// (store/file_databases.h): for PostgreSQL the one choice.dsn names, or a throwaway cluster
// started here (stopped and removed with the returned object); null for SQLite, whose
// files are graded in the explorer's temporary files. Throws DatabaseError when it cannot
// be had (as OpenDatabases), std::invalid_argument for an unknown backend.
std::unique_ptr<FileDatabases> OpenFileDatabases(const DatabaseChoice& choice);

// What a batch's child grades on: the server a parent's OpenFileDatabases had, adopted from
// what it handed over (choice.dsn: FileDatabases::dsn(); template_db), with nothing of its
// own to drop; null for SQLite.
std::unique_ptr<FileDatabases> AdoptFileDatabases(const DatabaseChoice& choice,
                                                  const std::string& template_db);

// How the database of a run of lessons is set up.
struct LessonSettings {
  DatabaseSettings file;  // SQLite: the file's journal, synchronous, busy timeout (and the
                          // side stores', on either backend)
  Isolation isolation = Isolation::kReadCommitted;  // PostgreSQL: the consumers' sessions'
};

// The database a run of lessons works on (`run`, each page of `docs`): the Backend the
// scenarios open stores on, the run's side stores (store/side_store.h), and what must live
// as long as they do. Destroyed, it removes what it made for the run (a temporary file, a
// throwaway cluster, the side stores' folder) and leaves a kept file (--db) or a server's
// schema (--dsn) as the lessons left it. Used by one thread at a time.
class LessonDatabase {
 public:
  virtual ~LessonDatabase() = default;
  virtual const Backend& backend() const = 0;
  virtual SideStores& sides() = 0;
  // Rethrows e, the exception being handled, so that its message names the database:
  // SQLite's names the file; PostgreSQL's name the server or the schema themselves and are
  // rethrown as they are.
  [[noreturn]] virtual void Rethrow(const DatabaseError& e) const = 0;
};

// Opens the database choice names for a run of lessons. SQLite: the file choice.path
// (created where missing) or else a new temporary file, its set-up connection kept open
// (sqlite/database.h, SetUpConnection::kKeep), the side stores beside it. PostgreSQL: the
// schema choice.schema on a throwaway cluster started here (unless choice.dsn names a
// server), created where missing; the side stores in a folder of their own, made only when
// a lesson first keeps one (a run makes no SQLite file it does not use). Throws
// DatabaseError when it cannot (as OpenDatabases), std::invalid_argument for an unknown
// backend.
std::unique_ptr<LessonDatabase> OpenLessonDatabase(const DatabaseChoice& choice,
                                                   const LessonSettings& settings);

// The explorer's database (store/explore_database.h): on server's schema (PostgreSQL's,
// OpenExploreServers), or, with none, SQLite's temporary files made with file's settings
// and tables' schemas. Throws as ExploreServer::OpenExploreDatabase and
// sqlite/explore_database.h's OpenSqliteExploreDatabase do.
std::unique_ptr<ExploreDatabase> OpenExploreDatabase(const ExploreServer* server,
                                                     const DatabaseSettings& file,
                                                     std::span<const ExploreRow> rows);

// The schemas `explore --backend postgres` runs on: choice.schema on a throwaway cluster
// started here (unless choice.dsn names a server), and on that cluster up to lanes - 1 more
// (choice.schema_2, _3, ...), each explored by a thread of its own; a --dsn server gets the
// one schema named. Destroyed, it stops and removes the cluster it started. Throws
// DatabaseError as OpenDatabases does.
class ExploreServers {
 public:
  virtual ~ExploreServers() = default;
  virtual const ExploreServer& schema() const = 0;
  virtual std::vector<const ExploreServer*> lanes() const = 0;
};
std::unique_ptr<ExploreServers> OpenExploreServers(const DatabaseChoice& choice, size_t lanes);

}  // namespace dedupsim
