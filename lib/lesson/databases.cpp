#include "lesson/databases.h"

#include <stdexcept>

#include "postgres/store.h"
#include "postgres/workload_database.h"
#include "sqlite/database.h"
#include "sqlite/side_store.h"
#include "sqlite/store.h"
#include "sqlite/workload_database.h"

namespace dedupsim {

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

}  // namespace dedupsim
