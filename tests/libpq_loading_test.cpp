// libpq is opened when the PostgreSQL backend is used, never at start-up (lib/postgres/
// libpq.h): a SQLite command maps neither libpq nor the libraries it needs, and a
// PostgreSQL command that cannot open it stops with one line and exit status 3 before it
// starts a server. The dynamic loader's own log (LD_DEBUG=files, glibc) says which
// libraries a process opened.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "exit_status.h"
#include "support.h"

namespace libpq_loading_test {

using dedupsim::testing::RunCli;

namespace {

// The libraries the loader opened, as its log names them ("file=libpq.so.5 [0]; ...").
bool Opened(const std::string& loader_log, const std::string& library) {
  return loader_log.find("file=" + library) != std::string::npos;
}

}  // namespace

TEST_CASE("SQLite commands start without libpq", "[libpq][cli]") {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"list"}, std::vector<std::string>{"run", "naive"}}) {
    auto r = RunCli(args, {"NO_COLOR=1", "LD_DEBUG=files"});
    INFO(args.back());
    REQUIRE(r.exit_code == 0);
    CHECK(Opened(r.err, "libsqlite3.so"));  // the log is there: it names what was opened
    CHECK_FALSE(Opened(r.err, "libpq.so"));
    CHECK_FALSE(Opened(r.err, "libssl.so"));
    CHECK_FALSE(Opened(r.err, "libgssapi_krb5.so"));
  }
}

TEST_CASE("the PostgreSQL backend without libpq: one line, exit 3, no server started",
          "[libpq][cli]") {
  const std::string missing = "DEDUPSIM_LIBPQ=/nonexistent/dedupsim-test/libpq.so.5";
  // A server of the run's own (no --dsn): refused before one is started. An unreachable
  // server (--dsn): libpq is what is missing, not the server.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", "inbox", "--backend", "postgres"},
        std::vector<std::string>{"run", "inbox", "--backend", "postgres", "--dsn",
                                 "host=/nonexistent/dedupsim-test"}}) {
    auto r = RunCli(args, {"NO_COLOR=1", missing});
    INFO(r.err);
    CHECK(r.exit_code == dedupsim::kExitDatabase);
    CHECK(r.out.empty());
    CHECK(r.err.find("/nonexistent/dedupsim-test/libpq.so.5") != std::string::npos);
    CHECK(r.err.find("libpq") != std::string::npos);
    CHECK(r.err.find("cannot connect") == std::string::npos);
    CHECK(r.err.find("initdb") == std::string::npos);
    CHECK(dedupsim::testing::SplitLines(r.err).size() == 1);
  }
}

}  // namespace libpq_loading_test
