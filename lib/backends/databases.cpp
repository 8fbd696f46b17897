#include "backends/databases.h"

#include <fmt/format.h>

#include <optional>
#include <stdexcept>

#include "postgres/cluster.h"
#include "postgres/file_databases.h"
#include "postgres/store.h"
#include "postgres/workload_database.h"
#include "sqlite/database.h"
#include "sqlite/explore_database.h"
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

class PgExploreServers final : public ExploreServers {
 public:
  PgExploreServers(const DatabaseChoice& choice, size_t lanes) {
    if (choice.dsn.empty()) cluster_.emplace(ThrowawayCluster::Start());
    schema_.emplace(
        PgDatabase::Open(choice.dsn.empty() ? cluster_->conninfo() : choice.dsn, choice.schema));
    for (size_t i = 1; cluster_ && i < lanes; ++i) {
      lanes_.push_back(
          PgDatabase::Open(cluster_->conninfo(), fmt::format("{}_{}", choice.schema, i + 1)));
    }
  }
  const ExploreServer& schema() const override { return *schema_; }
  std::vector<const ExploreServer*> lanes() const override {
    std::vector<const ExploreServer*> out;
    for (const PgDatabase& lane : lanes_) out.push_back(&lane);
    return out;
  }

 private:
  std::optional<ThrowawayCluster> cluster_;  // declared first: stopped after the schemas go
  std::optional<PgDatabase> schema_;
  std::vector<PgDatabase> lanes_;
};

}  // namespace

std::unique_ptr<ExploreDatabase> OpenExploreDatabase(const ExploreServer* server,
                                                     const DatabaseSettings& file,
                                                     std::span<const ExploreRow> rows) {
  if (server != nullptr) return server->OpenExploreDatabase();
  return OpenSqliteExploreDatabase(file, rows);
}

std::unique_ptr<ExploreServers> OpenExploreServers(const DatabaseChoice& choice, size_t lanes) {
  return std::make_unique<PgExploreServers>(choice, lanes);
}

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
