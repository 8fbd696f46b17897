// A consumer file set up for `dedupsim check --backend postgres`: in a database and a role of
// its own on the command's server (store/file_databases.h, made by backends/databases.h's
// OpenFileDatabases), which the explorer then runs it on (FileDatabase::schema()).
//
// A file that needs a second store (a cache, the provider that honours keys) is refused:
// the explorer keeps those in SQLite files only. What the server refuses of the file's
// schema or of a step's statement is a FileError at the text (FILE:LINE:COLUMN), as on
// SQLite; so is a step whose PostgreSQL text returns rows where its SQLite text does not, or
// the other way round.
//
// Not thread-safe; one per file. Never carried across fork().
#pragma once

#include <memory>

#include "files/consumer_file.h"
#include "store/file_databases.h"

namespace dedupsim::files {

// Fills each sql step's pg_query. Throws FileError for the file's faults (as above),
// DatabaseError when the server cannot do it.
std::unique_ptr<FileDatabase> SetUpFileDatabase(const FileDatabases& server, ConsumerFile& file);

}  // namespace dedupsim::files
