// Where a command's databases are made, whichever the backend (the backend factory), so a
// command and the libraries above the backends never name one: the command line says what
// it chose (a DatabaseChoice), backends/databases.h's OpenDatabases opens it once (the one
// place that names both backends), and everything after asks the Databases.
//
// SQLite's (sqlite/workload_database.h, SqliteDatabases) are files: a new temporary file
// for each request, removed with what was made of it, or the one file --db names, kept.
// PostgreSQL's (postgres/workload_database.h, PgDatabases) are a schema dedupsim owns on a
// server: a throwaway cluster started for the command (stopped and removed with the
// Databases), or the server --dsn names.
//
// A Databases outlives everything made from it. Open and Create throw DatabaseError
// (store/error.h) when the database cannot be had: a file or schema not dedupsim's, a
// server that does not start or answer.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "store/database_settings.h"
#include "store/workload_database.h"

namespace dedupsim {

// What a command line chose for its database.
struct DatabaseChoice {
  std::string backend = "sqlite";  // "sqlite", "postgres"
  std::string path;                // SQLite: a file to use and keep; "": new temporary files
  std::string dsn;                 // PostgreSQL: a server; "": a throwaway cluster started here
  std::string schema = "dedupsim";  // PostgreSQL: the schema dedupsim creates and owns
};

// How a workload's database and its sessions are set up.
struct WorkloadSettings {
  DatabaseSettings file;              // SQLite: the file's journal, synchronous, busy timeout
  bool automatic_checkpoints = true;  // SQLite: false, wal_autocheckpoint 0 on each connection
  bool synchronous_commit = true;     // PostgreSQL: each session's synchronous_commit
};

class Databases {
 public:
  virtual ~Databases() = default;
  virtual std::string_view backend() const = 0;  // "sqlite", "postgres"
  // A database for one run of a workload (the bench's, the soak's), its books not stocked
  // yet: SQLite's a new temporary file (removed with the returned object) or the kept file;
  // PostgreSQL's the schema (StockBooks empties what a run before left).
  virtual std::unique_ptr<WorkloadDatabase> CreateWorkload(const WorkloadSettings& settings) const = 0;
  // The run shared by consumers on several machines (store/durable_queue.h), in the
  // database every workload of these Databases uses: PostgreSQL's schema. Throws
  // DatabaseError where the database is not shared between machines (SQLite's files).
  virtual std::unique_ptr<SharedRun> OpenSharedRun() const;
};

}  // namespace dedupsim
