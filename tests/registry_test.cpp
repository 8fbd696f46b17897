// The registry of consumers (consumers/registry.h) is the one place a consumer is declared.
// Every reader holds exactly its entries: the explorer's rows, the example files, a
// scenario file's `builtin`, the bench's and the soak's strategies. A consumer declared in
// one place and missing in another fails here.
//
// Mutations caught: an entry dropped from the registry's array (its example file is left
// with no entry; the explorer and the bench lose it with it), an example file added,
// renamed or removed, an explorer row that copies an entry's field wrongly, a bench or soak
// strategy that is not an entry the bench runs.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "bench/strategy.h"
#include "consumers/registry.h"
#include "explore/strategies.h"
#include "files/consumer_file.h"
#include "files/scenario_file.h"
#include "support.h"

namespace dedupsim::testing::registry_test {

namespace {

std::vector<std::string> Names(std::span<const ConsumerEntry* const> entries) {
  std::vector<std::string> names;
  for (const ConsumerEntry* c : entries) names.emplace_back(c->name);
  return names;
}

std::vector<std::string> Strings(const std::vector<std::string_view>& views) {
  return {views.begin(), views.end()};
}

}  // namespace

TEST_CASE("the registry names each consumer once, with a partner of another effect",
          "[registry]") {
  std::vector<std::string> names = Names(AllConsumers());
  std::set<std::string> unique(names.begin(), names.end());
  CHECK(unique.size() == names.size());
  CHECK(ConsumerNames().find(names.front()) == 0);
  for (const ConsumerEntry* c : AllConsumers()) {
    INFO(c->name);
    CHECK(FindConsumer(c->name) == c);
    CHECK((c->effect == "stock" || c->effect == "email"));
    CHECK_FALSE(c->summary.empty());
    CHECK_FALSE(c->crash_points.empty());
    CHECK(c->handle != nullptr);
    const ConsumerEntry* partner = FindConsumer(c->partner);
    REQUIRE(partner != nullptr);
    CHECK(partner->effect != c->effect);
  }
  CHECK(FindConsumer("no-such-consumer") == nullptr);
}

TEST_CASE("the explorer's rows are the registry's entries, field for field", "[registry]") {
  REQUIRE(explore::AllStrategies().size() == AllConsumers().size());
  for (size_t i = 0; i < AllConsumers().size(); ++i) {
    const ConsumerEntry& c = *AllConsumers()[i];
    const explore::Strategy& row = *explore::AllStrategies()[i];
    INFO(c.name);
    CHECK(&explore::StrategyOf(c) == &row);
    CHECK(row.name == c.name);
    CHECK(row.summary == c.summary);
    CHECK(row.effect == c.effect);
    CHECK(row.partner == c.partner);
    CHECK(Strings(row.crash_points) == Strings(c.crash_points));
    // A side store is a SQLite file: such a row runs on SQLite only.
    CHECK(row.RunsOnPostgres() == (c.side == SideStoreKind::kNone));
    CHECK(row.tables.side == c.side);
  }
}

TEST_CASE("examples/consumers holds one file per entry of the registry, and no other",
          "[registry]") {
  // Each entry has its file, named after it, which names itself the same; each file is an
  // entry. (Each file is explored exactly like its entry's row: files_equivalence_test.)
  std::vector<std::string> names = Names(AllConsumers());
  std::vector<std::string> stems;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(DEDUPSIM_SOURCE_DIR) +
                                                               "/examples/consumers")) {
    const std::filesystem::path& path = entry.path();
    if (path.extension() != ".toml") continue;
    stems.push_back(path.stem().string());
    CHECK(files::LoadConsumerFile(path.string()).name == path.stem().string());
  }
  std::sort(names.begin(), names.end());
  std::sort(stems.begin(), stems.end());
  CHECK(stems == names);
}

TEST_CASE("a scenario file's builtin knows every entry of the registry, and nothing else",
          "[registry]") {
  TempDir dir;
  auto load = [&](std::string_view name) {
    const std::string path = dir.File("lesson.toml");
    WriteFile(path, "tag = \"t\"\nline = \"{n}\"\n[[consumer]]\nbuiltin = \"" + std::string(name) +
                        "\"\n[[message]]\nname = \"order\"\n[[deliver]]\nmessage = \"order\"\n"
                        "[[figure]]\nname = \"n\"\ncount = \"deliveries\"\n");
    return files::LoadScenarioFile(path);
  };
  for (const ConsumerEntry* c : AllConsumers()) {
    INFO(c->name);
    files::ScenarioFile file = load(c->name);
    REQUIRE(file.consumers.size() == 1);
    CHECK(file.consumers[0].builtin == &explore::StrategyOf(*c));
    CHECK(file.consumers[0].name == c->name);
  }
  try {
    load("no-such-consumer");
    FAIL("an unknown builtin was taken");
  } catch (const files::FileError& e) {
    CHECK(std::string(e.what()).find("expected one of " + ConsumerNames()) != std::string::npos);
  }
}

TEST_CASE("the bench runs raw and the entries whose BenchRole says so, the soak those entries",
          "[registry]") {
  std::vector<std::string> expected{"raw"};
  for (const ConsumerEntry* c : AllConsumers()) {
    if (c->bench == BenchRole::kNotRun) continue;
    expected.emplace_back(c->name);
    INFO(c->name);
    // The bench's workload reserves stock on the service's database alone.
    CHECK(c->effect == "stock");
    CHECK(c->side == SideStoreKind::kNone);
  }
  std::vector<std::string> bench;
  for (BenchStrategy b : AllBenchStrategies()) {
    bench.emplace_back(b.name());
    if (b.raw()) continue;
    CHECK(b.consumer() == FindConsumer(b.name()));
    CHECK(b.promises_exactly_once() == (b.consumer()->bench == BenchRole::kRunExactlyOnce));
  }
  CHECK(bench == expected);
  // The soak's consumers (its --strategy): the same entries, without the baseline.
  std::vector<std::string> soak;
  for (BenchStrategy b : ConsumerStrategies()) soak.emplace_back(b.name());
  expected.erase(expected.begin());
  CHECK(soak == expected);
}

}  // namespace dedupsim::testing::registry_test
