// A consumer file set up on PostgreSQL for `dedupsim check --backend postgres`: a database
// of its own on the server, and a role of its own that the file's statements run as.
//
// Create, as a role that may create databases and roles (the throwaway server's superuser):
//   - a role (LOGIN, no superuser, no CREATEDB/CREATEROLE/REPLICATION/BYPASSRLS, at most 8
//     connections) with statement_timeout and lock_timeout set on it;
//   - a database owned by the administering role, from template0, that nobody but that role
//     may connect to, create in or make temporary tables in;
//   - in it, dedupsim's schema and tables (PgDatabase::Open); the languages plpgsql and sql
//     and the functions that run SQL text or change settings (set_config, query_to_xml ...)
//     taken from PUBLIC, so no statement can lift its own timeout or run a second statement;
//   - the file's schema, run as the role (which may then CREATE in dedupsim's schema only),
//     then checked in the catalogue: the role may own tables, their indexes and sequences,
//     nothing else, and no trigger, rule or policy may sit on its tables (FileError at the
//     schema, as on SQLite); then everything it owns is given to the administering role and
//     its CREATE taken back, leaving it SELECT, INSERT, UPDATE and DELETE on the tables;
//   - each step's statement prepared as the role, wrapped in PREPARE so only SELECT, INSERT,
//     UPDATE, DELETE, MERGE or VALUES is accepted (FileError at the step otherwise, or for
//     text PostgreSQL does not take), and whether it returns rows learnt (Step::pg_query).
// The destructor drops the database (FORCE: its sessions are ended) and the role; it never
// throws. A file that needs a second store (a cache, the provider that honours keys) is
// refused: the explorer keeps those in SQLite files only.
//
// Not thread-safe; one per file. Never carried across fork().
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "files/consumer_file.h"
#include "postgres/store.h"

namespace dedupsim {
class ThrowawayCluster;
}  // namespace dedupsim

namespace dedupsim::files {

// The server as one check command uses it: where its administering connections go and what
// each file's database is copied from: template0 where the server has it; on a server with
// none (a throwaway one: postgres/cluster.cpp drops both templates) kPgCheckTemplate
// (postgres/store.h), made from `postgres` when missing (the command's throwaway server:
// nothing else is connected to it yet) and dropped with this object, or the marked one a
// test fixture made. Made once per command before any file is graded; the destructor drops
// what it made (never throws).
class PgCheckServer {
 public:
  // The server one check command grades on: the one dsn names (as a role that may create
  // databases and roles), or, when dsn is empty, a throwaway cluster started here and
  // stopped and removed with this object (after what was made in it is dropped); then
  // Prepare. First asks for libpq (postgres/libpq.h's RequireLibpq), before anything is
  // started. Throws DatabaseError when libpq, the server programs or the server fail.
  static std::unique_ptr<PgCheckServer> Start(const std::string& dsn);
  // conninfo: as a role that may create databases and roles.
  static std::unique_ptr<PgCheckServer> Prepare(const std::string& conninfo);
  // What a batch's child is handed (--dsn, --pg-template): no databases of its own to drop.
  static std::unique_ptr<PgCheckServer> Adopt(const std::string& admin_conninfo,
                                              const std::string& template_db);
  ~PgCheckServer();
  PgCheckServer(const PgCheckServer&) = delete;
  PgCheckServer& operator=(const PgCheckServer&) = delete;

  const std::string& admin_conninfo() const { return admin_conninfo_; }
  const std::string& template_db() const { return template_; }

 private:
  PgCheckServer() = default;
  std::string conninfo_;        // as given
  std::string admin_conninfo_;  // where administering connections go
  std::string template_;
  std::vector<std::string> made_;  // databases to drop
  std::unique_ptr<ThrowawayCluster> cluster_;  // Start with no dsn: stopped after made_ drops
};

class PgFileDatabase {
 public:
  // Fills each sql step's pg_query. Throws FileError for the file's faults (as above),
  // DatabaseError when the server cannot do it.
  static std::unique_ptr<PgFileDatabase> Create(const PgCheckServer& server, ConsumerFile& file);
  ~PgFileDatabase();
  PgFileDatabase(const PgFileDatabase&) = delete;
  PgFileDatabase& operator=(const PgFileDatabase&) = delete;

  // dedupsim's schema in the file's database, connected to as the file's role.
  const PgDatabase& database() const { return *database_; }
  // Empties the file's own tables (for Strategy::pg_reset); "" when it has none.
  const std::string& reset() const { return reset_; }
  const std::string& role() const { return role_; }
  const std::string& name() const { return name_; }  // the database's

 private:
  PgFileDatabase() = default;
  std::string admin_conninfo_;
  std::string name_;
  std::string role_;
  bool role_made_ = false;
  bool database_made_ = false;
  std::optional<PgDatabase> database_;
  std::string reset_;
};

// The conninfo with dbname and user replaced (a libpq conninfo: later keywords win).
std::string WithDatabase(const std::string& conninfo, const std::string& dbname,
                         const std::string& user = "");

}  // namespace dedupsim::files
