#include "pg_support.h"

#include <catch2/catch.hpp>
#include <fstream>

namespace dedupsim::testing {

namespace {

// The first line of the fixture's conninfo file; "" when it is missing or empty. No Catch
// macros: RunPg may run on a thread of a test, and Catch's are for the test's own thread.
std::string ReadConninfo() {
  std::ifstream in(DEDUPSIM_PG_CONNINFO_FILE);
  std::string conninfo;
  std::getline(in, conninfo);
  return conninfo;
}

}  // namespace

std::string Conninfo() {
  std::string conninfo = ReadConninfo();
  INFO("the postgres fixture's conninfo file: " DEDUPSIM_PG_CONNINFO_FILE);
  REQUIRE_FALSE(conninfo.empty());
  return conninfo;
}

CliResult RunPg(std::vector<std::string> args, const std::string& schema) {
  const std::string conninfo = ReadConninfo();
  if (conninfo.empty()) {
    CliResult missing;
    missing.exit_code = -1;
    missing.err = "no conninfo in the postgres fixture's file " DEDUPSIM_PG_CONNINFO_FILE;
    return missing;
  }
  args.insert(args.end(), {"--backend", "postgres", "--dsn", conninfo, "--pg-schema", schema});
  return RunCli(args);
}

}  // namespace dedupsim::testing
