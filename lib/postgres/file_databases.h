// PostgreSQL's FileDatabases (store/file_databases.h): `dedupsim check --backend postgres`
// sets each consumer file up in a database of its own on the server, and a role of its own
// that the file's statements run as. Made by backends/databases.h only.
//
// Created, as a role that may create databases and roles (the throwaway server's superuser):
//   - a role (LOGIN, no superuser, no CREATEDB/CREATEROLE/REPLICATION/BYPASSRLS, at most 8
//     connections) with statement_timeout and lock_timeout set on it;
//   - a database owned by the administering role, copied from the server's template (below),
//     that nobody but that role may connect to, create in or make temporary tables in;
//   - in it, dedupsim's schema and tables (PgDatabase::Open); the languages plpgsql and sql
//     and the functions that run SQL text or change settings (set_config, query_to_xml ...)
//     taken from PUBLIC, so no statement can lift its own timeout or run a second statement;
//   - the file's schema, run as the role (which may then CREATE in dedupsim's schema only),
//     then checked in the catalogue: the role may own tables, their indexes and sequences,
//     nothing else, and no trigger, rule or policy may sit on its tables (FileSqlRefused at
//     the schema); then everything it owns is given to the administering role and its
//     CREATE taken back, leaving it SELECT, INSERT, UPDATE and DELETE on the tables;
//   - each statement prepared as the role, wrapped in PREPARE so only SELECT, INSERT,
//     UPDATE, DELETE, MERGE or VALUES is accepted (FileSqlRefused at the statement
//     otherwise, or for text PostgreSQL does not take), and whether it returns rows learnt.
// A FileDatabase's destructor drops the database (FORCE: its sessions are ended) and the
// role.
//
// The template each file's database is copied from: template0 where the server has it; on a
// server with none (a throwaway one: postgres/cluster.cpp drops both templates)
// kPgCheckTemplate (postgres/store.h), made from `postgres` when missing (the command's
// throwaway server: nothing else is connected to it yet) and dropped with the
// FileDatabases, or the marked one a test fixture made.
#pragma once

#include <memory>
#include <string>

#include "store/file_databases.h"

namespace dedupsim {

// The server one check command grades on: the one dsn names (as a role that may create
// databases and roles), or, when dsn is empty, a throwaway cluster started here and stopped
// and removed with the returned object (after what was made in it is dropped). First asks
// for libpq (postgres/libpq.h's RequireLibpq), before anything is started. Throws
// DatabaseError when libpq, the server programs or the server fail.
std::unique_ptr<FileDatabases> StartPgFileDatabases(const std::string& dsn);

// What a batch's child is handed (FileDatabases::dsn(), template_db()): no databases of its
// own to drop.
std::unique_ptr<FileDatabases> AdoptPgFileDatabases(const std::string& admin_conninfo,
                                                    const std::string& template_db);

}  // namespace dedupsim
