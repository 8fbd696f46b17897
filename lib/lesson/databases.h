// The one place where what a command line chose for its database (store/databases.h's
// DatabaseChoice) becomes a backend's Databases: SQLite's files (sqlite/workload_database.h)
// or PostgreSQL's schema (postgres/workload_database.h). Everything above asks the
// Databases it returns and names neither backend.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "store/databases.h"
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

}  // namespace dedupsim
