// The throwaway cluster's template (lib/postgres/cluster_template.h): made by initdb once,
// kept in the cache folder, copied for each later cluster; a stale, foreign or damaged one
// is made again. Each check reads what happened, not what should: whether initdb ran is
// read from the cluster's log (initdb writes its banner there), what a cluster holds from
// the server. These clusters are the test's own (not the fixture's), in its own folders.
#include <dirent.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "postgres/cluster.h"
#include "postgres/cluster_template.h"
#include "postgres/connection.h"
#include "support.h"

namespace dedupsim::cluster_template_test {
namespace {

std::vector<std::string> Entries(const std::string& path) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(path.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(d);
  }
  return names;
}

// Sets an environment variable for the test's scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_.empty()) {
      ::unsetenv(name_);
    } else {
      ::setenv(name_, old_.c_str(), 1);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
};

struct Started {
  bool initdb = false;      // initdb's banner is in the cluster's log
  std::string databases;    // the cluster's databases, as the server lists them
  bool sees_marker = false;  // a table an earlier cluster created is there
};

// Starts a cluster, reads what it is, optionally writes into it, stops it.
Started StartOne(bool write_marker = false) {
  ThrowawayCluster cluster = ThrowawayCluster::Start();
  Started s;
  s.initdb = testing::ReadFile(cluster.folder() + "/server.log")
                 .find("The files belonging to this database system") != std::string::npos;
  PgConnection c(cluster.conninfo(), "");
  s.databases = c.Exec("SELECT string_agg(datname, ',' ORDER BY datname) FROM pg_database").Text(0, 0);
  s.sees_marker = c.Exec("SELECT to_regclass('public.copy_marker') IS NOT NULL").Text(0, 0) == "t";
  if (write_marker) c.Exec("CREATE TABLE public.copy_marker (a int)");
  return s;
}

// Mutations this catches: ClusterTemplate::Valid ignoring the stamp (the stale case runs no
// initdb); CopyTo never copying (the second cluster runs initdb); hard links instead of
// copies (the marker written in one cluster shows in the next); no retry after a template
// that does not start (Start throws); the template databases not dropped (the list).
TEST_CASE(
    "a throwaway cluster is a copy of the cached template, and a stale, foreign or damaged "
    "template is made again by initdb",
    "[postgres]") {
  testing::TempDir tmp;
  ::chmod(tmp.path().c_str(), 0755);  // the server runs as `postgres` when the tests run as root
  testing::TempDir cache_root;
  const std::string cache = cache_root.path() + "/dedupsim";
  const std::string folder = cache + "/postgres-template";
  ScopedEnv tmpdir("TMPDIR", tmp.path());
  ScopedEnv cache_dir("DEDUPSIM_CACHE_DIR", cache);

  // No template yet: initdb, and the cluster kept, with the one database dedupsim uses.
  Started first = StartOne();
  CHECK(first.initdb);
  CHECK(first.databases == "postgres");
  const std::string stamp = testing::ReadFile(folder + "/stamp");
  CHECK(stamp.rfind("dedupsim postgres template 1\n", 0) == 0);

  // A copy: no initdb, and what one cluster writes stays in it.
  Started second = StartOne(/*write_marker=*/true);
  CHECK_FALSE(second.initdb);
  CHECK(second.databases == "postgres");
  CHECK_FALSE(second.sees_marker);
  Started third = StartOne();
  CHECK_FALSE(third.initdb);
  CHECK_FALSE(third.sees_marker);

  // Stale: made by other server programs (the stamp differs): not copied (the cache's own
  // answer, read without a server), and replaced by the next command's initdb.
  const std::optional<ClusterTemplate> cache_now =
      ClusterTemplate::For(FindServerBinDir(), {"--no-sync", "-U", "dedupsim", "--auth=trust",
                                               "-E", "UTF8", "--locale=C"});
  REQUIRE(cache_now.has_value());
  CHECK(cache_now->stamp() == stamp);  // the arguments ThrowawayCluster gives initdb
  const std::string scratch = cache_root.path() + "/scratch";
  REQUIRE(::mkdir(scratch.c_str(), 0700) == 0);
  REQUIRE(cache_now->CopyTo(scratch + "/valid", FileOwner{}));
  testing::WriteFile(folder + "/stamp",
                     "dedupsim postgres template 1\nbin /usr/lib/postgresql/9.6/bin\n");
  CHECK_FALSE(cache_now->CopyTo(scratch + "/stale", FileOwner{}));
  CHECK(StartOne().initdb);
  CHECK(testing::ReadFile(folder + "/stamp") == stamp);
  // Damaged after the check: pg_control zeroed. The copy does not start; made again.
  {
    const std::string control = folder + "/data/global/pg_control";
    const size_t size = testing::ReadFile(control).size();
    REQUIRE(size > 0);
    testing::WriteFile(control, std::string(size, '\0'));
  }
  Started damaged = StartOne();
  CHECK(damaged.initdb);
  CHECK(damaged.databases == "postgres");
  CHECK_FALSE(StartOne().initdb);

  // Foreign or half-made: the stamp is right, the data folder is not a cluster. Not copied.
  REQUIRE(std::remove((folder + "/data/PG_VERSION").c_str()) == 0);
  CHECK_FALSE(cache_now->CopyTo(scratch + "/foreign", FileOwner{}));
  CHECK(Entries(scratch) == std::vector<std::string>{"valid"});

  // Nothing else in the cache folder, nothing left in the temporary folder.
  CHECK(Entries(cache) == std::vector<std::string>{"postgres-template"});
  CHECK(Entries(tmp.path()).empty());
}

TEST_CASE("a cache folder that is not the user's own is not used", "[postgres]") {
  testing::TempDir cache_root;
  const std::string cache = cache_root.path() + "/dedupsim";
  REQUIRE(::mkdir(cache.c_str(), 0777) == 0);
  REQUIRE(::chmod(cache.c_str(), 0777) == 0);  // writable by anyone: someone could plant one
  ScopedEnv cache_dir("DEDUPSIM_CACHE_DIR", cache);
  CHECK_FALSE(ClusterTemplate::For(FindServerBinDir(), {"-U", "x"}).has_value());
  REQUIRE(::chmod(cache.c_str(), 0700) == 0);
  CHECK(ClusterTemplate::For(FindServerBinDir(), {"-U", "x"}).has_value());
}

}  // namespace
}  // namespace dedupsim::cluster_template_test
