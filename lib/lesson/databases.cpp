#include "lesson/databases.h"

#include <stdexcept>

#include "postgres/file_databases.h"
#include "postgres/store.h"
#include "postgres/workload_database.h"
#include "sqlite/database.h"
#include "sqlite/side_store.h"
#include "sqlite/store.h"
#include "sqlite/workload_database.h"

namespace dedupsim {

namespace {

class SqliteLessonDatabase final : public LessonDatabase {
 public:
  explicit SqliteLessonDatabase(DatabaseFile file)
      : file_(std::move(file)), backend_(file_), sides_(file_) {}
  const Backend& backend() const override { return backend_; }
  SideStores& sides() override { return sides_; }
  [[noreturn]] void Rethrow(const DatabaseError& e) const override {
    throw InDatabase(file_.path(), e);  // every database error names the file
  }

 private:
  DatabaseFile file_;
  SqliteBackend backend_;  // borrows file_
  SqliteSideStores sides_;  // beside file_
};

class PgLessonDatabase final : public LessonDatabase {
 public:
  PgLessonDatabase(const DatabaseChoice& choice, const LessonSettings& settings)
      : databases_(choice.dsn, choice.schema),
        backend_(databases_.database(), settings.isolation),
        sides_(settings.file) {}
  const Backend& backend() const override { return backend_; }
  SideStores& sides() override { return sides_; }
  [[noreturn]] void Rethrow(const DatabaseError&) const override { throw; }

 private:
  PgDatabases databases_;  // the cluster (unless --dsn) and the schema
  PgBackend backend_;      // borrows databases_'s schema
  SqliteSideStores sides_;  // in a folder of their own
};

}  // namespace

std::unique_ptr<Databases> OpenDatabases(const DatabaseChoice& choice) {
  if (choice.backend == "postgres") return std::make_unique<PgDatabases>(choice.dsn, choice.schema);
  if (choice.backend == "sqlite") return std::make_unique<SqliteDatabases>(choice.path);
  throw std::invalid_argument("unknown backend: " + choice.backend);
}

std::vector<std::string> FilesOfDatabase(const DatabaseChoice& choice) {
  if (choice.backend != "sqlite" || choice.path.empty()) return {};
  return FilesOfDatabase(choice.path);
}

void WithExistingStore(const DatabaseChoice& choice, const std::function<void(Store&)>& f) {
  if (choice.backend == "postgres") {
    PgDatabase pg = PgDatabase::Open(choice.dsn, choice.schema, IfMissing::kFail);
    PgStore store(pg.Connect(), Isolation::kReadCommitted);
    f(store);
    return;
  }
  DatabaseFile db = DatabaseFile::Open(choice.path, DatabaseSettings{}, IfMissing::kFail);
  try {
    Connection connection = db.Connect();
    SqliteStore store(connection);
    f(store);
  } catch (const DatabaseError& e) {
    throw InDatabase(db.path(), e);
  }
}

std::unique_ptr<FileDatabases> OpenFileDatabases(const DatabaseChoice& choice) {
  if (choice.backend == "postgres") return StartPgFileDatabases(choice.dsn);
  if (choice.backend == "sqlite") return nullptr;
  throw std::invalid_argument("unknown backend: " + choice.backend);
}

std::unique_ptr<FileDatabases> AdoptFileDatabases(const DatabaseChoice& choice,
                                                  const std::string& template_db) {
  if (choice.backend == "postgres") return AdoptPgFileDatabases(choice.dsn, template_db);
  if (choice.backend == "sqlite") return nullptr;
  throw std::invalid_argument("unknown backend: " + choice.backend);
}

std::unique_ptr<LessonDatabase> OpenLessonDatabase(const DatabaseChoice& choice,
                                                   const LessonSettings& settings) {
  if (choice.backend == "postgres") return std::make_unique<PgLessonDatabase>(choice, settings);
  if (choice.backend != "sqlite") throw std::invalid_argument("unknown backend: " + choice.backend);
  return std::make_unique<SqliteLessonDatabase>(
      choice.path.empty() ? DatabaseFile::CreateTemporary(settings.file, SetUpConnection::kKeep)
                          : DatabaseFile::Open(choice.path, settings.file));
}

}  // namespace dedupsim
