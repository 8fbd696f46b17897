// A server on which `dedupsim check` grades each consumer file in a database and a role of
// its own, whichever the backend, so that files/ and cli/ name none: backends/databases.h's
// OpenFileDatabases makes it (PostgreSQL's: postgres/file_databases.h; on SQLite each file
// is graded in the explorer's temporary file and there is no server).
//
// Rules:
// - Create sets one file up: a role of its own with a budget on each statement and each
//   lock wait, a database of its own that only the administering role may change, the
//   file's schema run as the role and checked (only tables, their indexes and sequences;
//   nothing on its tables but rows), then every step's statement prepared as the role
//   without running it. The destroyed FileDatabase drops what Create made; it never throws.
// - What the server refuses of the file's SQL throws FileSqlRefused (which text, and why);
//   everything else that fails throws DatabaseError (store/error.h).
// - A FileDatabases outlives every FileDatabase made from it; destroyed, it drops what it
//   made on the server (and stops a server it started). Not thread-safe; one per command.
//   Never carried across fork(): a batch's child adopts the server instead (dsn(),
//   template_db(); backends/databases.h's AdoptFileDatabases).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/input_error.h"
#include "store/explore_database.h"

namespace dedupsim {

// What of a consumer file its database is set up with, in the server's dialect.
struct FileSql {
  std::string schema;                   // the file's own tables; "" for none
  std::vector<std::string> statements;  // each step's statement, in the file's order
};

// A text of FileSql the server refused: what() is why, as the file's reader reads it
// ("PostgreSQL does not take it: ..."), without where it is written or the text itself.
class FileSqlRefused : public InputError {
 public:
  static constexpr size_t kSchema = SIZE_MAX;
  enum class Fault {
    kNotTaken,    // the server could not run (the schema) or prepare (a statement) the text
    kNotAllowed,  // the schema ran, and made what a file's schema may not (what() names it)
  };
  FileSqlRefused(size_t statement, Fault fault, const std::string& why)
      : InputError(why), statement_(statement), fault_(fault) {}
  // The index in FileSql::statements, or kSchema.
  size_t statement() const { return statement_; }
  Fault fault() const { return fault_; }

 private:
  size_t statement_;
  Fault fault_;
};

// One consumer file's database and role on the server.
class FileDatabase {
 public:
  virtual ~FileDatabase() = default;
  // The schema the explorer runs the file on, connected to as the file's role
  // (ExploreOptions::postgres).
  virtual const ExploreServer& schema() const = 0;
  // dedupsim's statements that empty the file's own tables (FileStrategy::SetPostgresReset);
  // "" when it has none.
  virtual const std::string& reset() const = 0;
};

// Called as each statement of FileSql is prepared, with its index and whether it returns
// rows; may throw to refuse the file there (the statements after it are not prepared).
using FileStatementPrepared = std::function<void(size_t statement, bool returns_rows)>;

class FileDatabases {
 public:
  virtual ~FileDatabases() = default;
  // Sets a file up (the rules above). Throws FileSqlRefused, what prepared throws, or
  // DatabaseError.
  virtual std::unique_ptr<FileDatabase> Create(const FileSql& sql,
                                               const FileStatementPrepared& prepared) const = 0;
  // What a batch's child is handed to adopt this server (check's --dsn and --pg-template):
  // where administering connections go, and what each file's database is copied from.
  virtual const std::string& dsn() const = 0;
  virtual const std::string& template_db() const = 0;
};

}  // namespace dedupsim
