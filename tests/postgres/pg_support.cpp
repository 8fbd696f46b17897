#include "pg_support.h"

#include <catch2/catch.hpp>
#include <fstream>

namespace dedupsim::testing {

std::string Conninfo() {
  std::ifstream in(DEDUPSIM_PG_CONNINFO_FILE);
  std::string conninfo;
  std::getline(in, conninfo);
  INFO("the postgres fixture's conninfo file: " DEDUPSIM_PG_CONNINFO_FILE);
  REQUIRE_FALSE(conninfo.empty());
  return conninfo;
}

CliResult RunPg(std::vector<std::string> args, const std::string& schema) {
  args.insert(args.end(), {"--backend", "postgres", "--dsn", Conninfo(), "--pg-schema", schema});
  return RunCli(args);
}

}  // namespace dedupsim::testing
