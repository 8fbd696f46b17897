#include "postgres/file_databases.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <vector>

#include "postgres/cluster.h"
#include "postgres/error.h"
#include "postgres/libpq.h"
#include "postgres/store.h"

namespace dedupsim {

namespace {

// What the file's role may spend on one statement, and on waiting for one lock. The
// explorer never leaves a statement waiting longer than the steps of one schedule take.
constexpr const char* kStatementTimeout = "5s";
constexpr const char* kLockTimeout = "5s";

// The functions that run SQL text of their own or change a setting, taken from PUBLIC in
// the file's database: with them a statement could lift its own statement_timeout, or run
// statements the PREPARE check never saw. (pg_read_file and the other server-file functions
// are not PUBLIC's to begin with.)
constexpr const char* kRevokedFunctions[] = {
    "pg_catalog.set_config(text, text, boolean)",
    "pg_catalog.query_to_xml(text, boolean, boolean, text)",
    "pg_catalog.query_to_xmlschema(text, boolean, boolean, text)",
    "pg_catalog.query_to_xml_and_xmlschema(text, boolean, boolean, text)",
    "pg_catalog.cursor_to_xml(refcursor, integer, boolean, boolean, text)",
    "pg_catalog.cursor_to_xmlschema(refcursor, boolean, boolean, text)",
    "pg_catalog.pg_advisory_lock(bigint)",
    "pg_catalog.pg_advisory_lock(integer, integer)",
    "pg_catalog.pg_advisory_lock_shared(bigint)",
    "pg_catalog.pg_advisory_lock_shared(integer, integer)",
    "pg_catalog.pg_terminate_backend(integer, bigint)",
    "pg_catalog.pg_cancel_backend(integer)",
};

std::string UniqueName() {
  static std::atomic<int> counter{0};
  const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
  return fmt::format("dedupsim_check_{}_{}_{:x}", static_cast<long>(getpid()), counter++,
                     static_cast<unsigned long long>(ticks) & 0xffffffu);
}

std::string ConninfoValue(const std::string& v) {
  std::string out = "'";
  for (char ch : v) {
    if (ch == '\'' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "'";
}

// What the role owns or has put on its tables that a schema may not make: "" when only
// tables, their indexes, sequences and TOAST tables.
std::string Forbidden(PgConnection& admin, const std::string& role) {
  PgResult r = admin.Exec(
      "SELECT 'a ' || CASE c.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' "
      "WHEN 'c' THEN 'type' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' "
      "ELSE 'relation' END || ' (' || c.relname || ')' FROM pg_class c JOIN pg_roles o ON "
      "o.oid = c.relowner WHERE o.rolname = $1 AND c.relkind NOT IN ('r', 'i', 'S', 't') "
      "UNION ALL SELECT 'a function (' || p.proname || ')' FROM pg_proc p JOIN pg_roles o ON "
      "o.oid = p.proowner WHERE o.rolname = $1 "
      "UNION ALL SELECT 'a type (' || t.typname || ')' FROM pg_type t JOIN pg_roles o ON "
      "o.oid = t.typowner WHERE o.rolname = $1 AND t.typrelid = 0 AND NOT EXISTS (SELECT 1 "
      "FROM pg_type e WHERE e.oid = t.typelem AND e.typrelid <> 0) "
      "UNION ALL SELECT 'a trigger (' || g.tgname || ' on ' || g.tgrelid::regclass::text || ')' "
      "FROM pg_trigger g WHERE NOT g.tgisinternal "
      "UNION ALL SELECT 'a rule (' || w.rulename || ' on ' || w.ev_class::regclass::text || ')' "
      "FROM pg_rewrite w JOIN pg_class c ON c.oid = w.ev_class JOIN pg_namespace n ON n.oid = "
      "c.relnamespace WHERE w.rulename <> '_RETURN' AND n.nspname NOT IN ('pg_catalog', "
      "'information_schema') "
      "UNION ALL SELECT 'a policy (' || y.polname || ')' FROM pg_policy y "
      "UNION ALL SELECT 'an object of ' || d.classid::regclass::text FROM pg_shdepend d JOIN "
      "pg_roles o ON o.oid = d.refobjid WHERE o.rolname = $1 AND d.deptype = 'o' AND d.dbid = "
      "(SELECT oid FROM pg_database WHERE datname = current_database()) AND d.classid NOT IN "
      "('pg_class'::regclass, 'pg_type'::regclass, 'pg_proc'::regclass) LIMIT 1",
      {role});
  return r.rows() == 0 ? "" : r.Text(0, 0);
}

// The server's message on one line: its first, without "ERROR:  " (the rest points at the
// text with a caret on lines of its own).
std::string ServerSaid(const std::exception& e) {
  std::string text = e.what();
  if (size_t nl = text.find('\n'); nl != std::string::npos) text.resize(nl);
  for (const char* prefix : {"ERROR:  ", "FATAL:  "}) {
    if (text.rfind(prefix, 0) == 0) text.erase(0, std::string_view(prefix).size());
  }
  return text;
}

// The conninfo with dbname and user replaced (a libpq conninfo: later keywords win).
std::string WithDatabase(const std::string& conninfo, const std::string& dbname,
                         const std::string& user = "") {
  std::string out = conninfo + " dbname=" + ConninfoValue(dbname);
  if (!user.empty()) out += " user=" + ConninfoValue(user);
  return out;
}

class PgFileDatabases final : public FileDatabases {
 public:
  static std::unique_ptr<PgFileDatabases> Prepare(const std::string& conninfo);
  static std::unique_ptr<PgFileDatabases> Adopt(const std::string& admin_conninfo,
                                                const std::string& template_db);
  ~PgFileDatabases() override;
  PgFileDatabases(const PgFileDatabases&) = delete;
  PgFileDatabases& operator=(const PgFileDatabases&) = delete;

  std::unique_ptr<FileDatabase> Create(const FileSql& sql,
                                       const FileStatementPrepared& prepared) const override;
  const std::string& dsn() const override { return admin_conninfo_; }
  const std::string& template_db() const override { return template_; }

  std::unique_ptr<ThrowawayCluster> cluster;  // Start with no dsn: stopped after made_ drops

 private:
  PgFileDatabases() = default;
  std::string conninfo_;        // as given
  std::string admin_conninfo_;  // where administering connections go
  std::string template_;
  std::vector<std::string> made_;  // databases to drop
};

class PgFileDatabase final : public FileDatabase {
 public:
  PgFileDatabase() = default;
  ~PgFileDatabase() override;
  PgFileDatabase(const PgFileDatabase&) = delete;
  PgFileDatabase& operator=(const PgFileDatabase&) = delete;

  const ExploreServer& schema() const override { return *database_; }
  const std::string& reset() const override { return reset_; }

  std::string admin_conninfo_;
  std::string name_;  // the database's
  std::string role_;
  bool role_made_ = false;
  bool database_made_ = false;
  std::optional<PgDatabase> database_;  // dedupsim's schema, connected to as the role
  std::string reset_;
};

std::unique_ptr<PgFileDatabases> PgFileDatabases::Prepare(const std::string& conninfo) {
  std::unique_ptr<PgFileDatabases> s(new PgFileDatabases());
  s->conninfo_ = conninfo;
  s->admin_conninfo_ = conninfo;
  PgConnection c(conninfo);
  if (c.Exec("SELECT 1 FROM pg_database WHERE datname = 'template0'").rows() == 1) {
    s->template_ = "template0";
    return s;
  }
  s->template_ = kPgCheckTemplate;
  PgResult found = c.Exec(
      "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $1",
      {kPgCheckTemplate});
  if (found.rows() == 1) {
    if (found.Get(0, 0) != std::optional<std::string>(kPgMarker)) {
      throw DatabaseError(fmt::format("PostgreSQL database {} exists and was not created by "
                                      "dedupsim; check leaves it untouched",
                                      kPgCheckTemplate));
    }
    return s;
  }
  c.ExecScript(kPgCheckTemplateSql[0]);
  s->made_.push_back(kPgCheckTemplate);
  c.ExecScript(kPgCheckTemplateSql[1]);
  return s;
}

std::unique_ptr<PgFileDatabases> PgFileDatabases::Adopt(const std::string& admin_conninfo,
                                                        const std::string& template_db) {
  std::unique_ptr<PgFileDatabases> s(new PgFileDatabases());
  s->conninfo_ = admin_conninfo;
  s->admin_conninfo_ = admin_conninfo;
  s->template_ = template_db;
  return s;
}

PgFileDatabases::~PgFileDatabases() {
  if (made_.empty()) return;
  try {
    PgConnection c(conninfo_);
    for (const std::string& name : made_) {
      c.ExecScript(fmt::format("DROP DATABASE IF EXISTS {} WITH (FORCE)", QuoteIdentifier(name)));
    }
  } catch (const std::exception&) {
    // The server is gone (a throwaway one stops with the command): nothing is left to drop.
  }
}

std::unique_ptr<FileDatabase> PgFileDatabases::Create(const FileSql& sql,
                                                      const FileStatementPrepared& prepared) const {
  auto db = std::make_unique<PgFileDatabase>();
  db->admin_conninfo_ = admin_conninfo_;
  db->name_ = UniqueName();
  db->role_ = db->name_;
  const std::string role = QuoteIdentifier(db->role_);
  const std::string dbname = QuoteIdentifier(db->name_);
  {
    PgConnection admin(admin_conninfo_);
    admin.ExecScript(fmt::format(
        "CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS "
        "NOINHERIT CONNECTION LIMIT 8",
        role));
    db->role_made_ = true;
    admin.ExecScript(fmt::format("ALTER ROLE {} SET statement_timeout = '{}'", role,
                                 kStatementTimeout));
    admin.ExecScript(fmt::format("ALTER ROLE {} SET lock_timeout = '{}'", role, kLockTimeout));
    admin.ExecScript(
        fmt::format("CREATE DATABASE {} TEMPLATE {}", dbname, QuoteIdentifier(template_)));
    db->database_made_ = true;
    admin.ExecScript(fmt::format("REVOKE ALL ON DATABASE {} FROM PUBLIC", dbname));
    admin.ExecScript(fmt::format("GRANT CONNECT ON DATABASE {} TO {}", dbname, role));
  }
  const std::string admin_here = WithDatabase(admin_conninfo_, db->name_);
  const std::string role_here = WithDatabase(admin_conninfo_, db->name_, db->role_);
  PgDatabase::Open(admin_here, "dedupsim");  // dedupsim's schema and tables, marked
  PgConnection admin(admin_here);
  std::string lockdown = "REVOKE ALL ON SCHEMA public FROM PUBLIC;"
                         "REVOKE USAGE ON LANGUAGE plpgsql FROM PUBLIC;"
                         "REVOKE USAGE ON LANGUAGE sql FROM PUBLIC;";
  for (const char* f : kRevokedFunctions) {
    lockdown += fmt::format("REVOKE EXECUTE ON FUNCTION {} FROM PUBLIC;", f);
  }
  lockdown += fmt::format(
      "GRANT USAGE, CREATE ON SCHEMA dedupsim TO {0};"
      "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA dedupsim TO {0};",
      role);
  admin.ExecScript(lockdown);
  db->database_.emplace(PgDatabase::Open(role_here, "dedupsim"));

  // The file's schema, as its role: only CREATE in dedupsim's schema is open to it.
  if (!sql.schema.empty()) {
    try {
      PgConnection as_role = db->database_->Connect();
      as_role.ExecScript(sql.schema);
    } catch (const PgError& e) {
      throw FileSqlRefused(FileSqlRefused::kSchema, FileSqlRefused::Fault::kNotTaken,
                           fmt::format("PostgreSQL does not take it: {}", ServerSaid(e)));
    }
    if (std::string what = Forbidden(admin, db->role_); !what.empty()) {
      throw FileSqlRefused(
          FileSqlRefused::kSchema, FileSqlRefused::Fault::kNotAllowed,
          fmt::format("{} is not allowed: a schema only creates tables, and indexes on the "
                      "tables it creates (CREATE TABLE, CREATE INDEX) (on PostgreSQL)",
                      what));
    }
    PgResult tables = admin.Exec(
        "SELECT c.relname FROM pg_class c JOIN pg_roles o ON o.oid = c.relowner WHERE o.rolname "
        "= $1 AND c.relkind = 'r' ORDER BY c.relname",
        {db->role_});
    for (int row = 0; row < tables.rows(); ++row) {
      db->reset_ += fmt::format("DELETE FROM dedupsim.{};", QuoteIdentifier(tables.Text(row, 0)));
    }
  }
  // Whatever it made is the administering role's now; it keeps reading and writing rows.
  admin.ExecScript(fmt::format(
      "REASSIGN OWNED BY {0} TO CURRENT_USER;"
      "REVOKE CREATE ON SCHEMA dedupsim FROM {0};"
      "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA dedupsim TO {0};"
      "GRANT USAGE ON ALL SEQUENCES IN SCHEMA dedupsim TO {0};",
      role));

  // Each statement, as the role: one SELECT, INSERT, UPDATE, DELETE, MERGE or VALUES (the
  // only statements PREPARE takes), which PostgreSQL prepares.
  PgConnection as_role = db->database_->Connect();
  for (size_t i = 0; i < sql.statements.size(); ++i) {
    const std::string& text = sql.statements[i];
    try {
      as_role.ExecScript("DEALLOCATE ALL");
      as_role.Exec("PREPARE dedupsim_step AS " + text);
    } catch (const PgError& e) {
      throw FileSqlRefused(
          i, FileSqlRefused::Fault::kNotTaken,
          fmt::format("PostgreSQL does not take this statement: {}", ServerSaid(e)));
    }
    prepared(i, as_role.DescribeColumns(text) > 0);
  }
  return db;
}

PgFileDatabase::~PgFileDatabase() {
  try {
    PgConnection admin(admin_conninfo_);
    if (database_made_) {
      admin.ExecScript(
          fmt::format("DROP DATABASE IF EXISTS {} WITH (FORCE)", QuoteIdentifier(name_)));
    }
    if (role_made_) admin.ExecScript(fmt::format("DROP ROLE IF EXISTS {}", QuoteIdentifier(role_)));
  } catch (const std::exception&) {
    // The server is gone (a throwaway one stops with the command): nothing is left to drop.
  }
}

}  // namespace

std::unique_ptr<FileDatabases> StartPgFileDatabases(const std::string& dsn) {
  RequireLibpq();
  if (!dsn.empty()) return PgFileDatabases::Prepare(dsn);
  auto cluster = std::make_unique<ThrowawayCluster>(ThrowawayCluster::Start());
  std::unique_ptr<PgFileDatabases> s = PgFileDatabases::Prepare(cluster->conninfo());
  s->cluster = std::move(cluster);
  return s;
}

std::unique_ptr<FileDatabases> AdoptPgFileDatabases(const std::string& admin_conninfo,
                                                    const std::string& template_db) {
  return PgFileDatabases::Adopt(admin_conninfo, template_db);
}

}  // namespace dedupsim
