// What the postgres-labelled tests share: the fixture's server, and dedupsim run on it.
#pragma once

#include <string>
#include <vector>

#include "support.h"

namespace dedupsim::testing {

// The conninfo of the fixture's throwaway server; fails the test when it is not there.
std::string Conninfo();

// Runs dedupsim on the fixture's server, in the test's own schema. Safe on any thread of a
// test (it uses no Catch macro); without the fixture's conninfo it returns exit_code -1.
CliResult RunPg(std::vector<std::string> args, const std::string& schema);

}  // namespace dedupsim::testing
