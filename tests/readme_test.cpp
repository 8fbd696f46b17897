// The README's two set-up commands are the ones CI runs.
#include <catch2/catch.hpp>

#include "support.h"

namespace readme_test {

using namespace dedupsim::testing;

TEST_CASE("the README opens with the two commands and .ci/run runs the test one", "[docs]") {
  std::vector<std::string> commands;
  bool in_block = false;
  bool taken = false;
  for (const std::string& line : SplitLines(ReadFile(std::string(DEDUPSIM_SOURCE_DIR) + "/README.md"))) {
    if (line.rfind("```", 0) == 0) {
      in_block = !in_block;
      taken = false;
      continue;
    }
    if (in_block && !taken) {  // the first line of each block
      commands.push_back(line);
      taken = true;
    }
    if (commands.size() == 2) break;
  }
  REQUIRE(commands.size() == 2);
  CHECK(commands[0].find("dedupsim run all") != std::string::npos);
  CHECK(commands[1].find("ctest") != std::string::npos);
  std::string ci = ReadFile(std::string(DEDUPSIM_SOURCE_DIR) + "/.ci/run");
  CHECK(ci.find("\n" + commands[1] + "\n") != std::string::npos);
}

TEST_CASE("the README's What you see block is the post's six lines", "[docs]") {
  std::vector<std::string> lines =
      SplitLines(ReadFile(std::string(DEDUPSIM_SOURCE_DIR) + "/README.md"));
  std::vector<std::string> shown;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    if (lines[i] != "$ dedupsim run all") continue;
    for (size_t j = i + 1; j < lines.size() && lines[j].rfind("```", 0) != 0; ++j)
      shown.push_back(lines[j]);
    break;
  }
  CHECK(shown == PostLines());
}

}  // namespace readme_test
