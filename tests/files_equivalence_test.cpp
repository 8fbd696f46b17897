// Every built-in consumer written as a file in examples/consumers/ is explored exactly like
// its C++ twin: the same crash points, and under every fault the same schedules, outcome
// counts, variants and shortest counterexample (same picks, same steps, same figures).
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench/strategy.h"
#include "explore/explorer.h"
#include "explore/faults.h"
#include "explore/strategies.h"
#include "files/consumer_file.h"
#include "files/file_strategy.h"

namespace dedupsim::testing::files_equivalence_test {

namespace {

using namespace dedupsim::explore;
using dedupsim::explore::Strategy;

std::string Example(const std::string& name) {
  return std::string(DEDUPSIM_SOURCE_DIR) + "/examples/consumers/" + name + ".toml";
}

void RequireSameCell(const CellResult& twin, const CellResult& file) {
  INFO(twin.strategy->name << " x " << twin.fault->name);
  REQUIRE(file.schedules == twin.schedules);
  REQUIRE(file.steps == twin.steps);
  REQUIRE(file.counts == twin.counts);
  REQUIRE(file.variants.size() == twin.variants.size());
  for (size_t v = 0; v < twin.variants.size(); ++v) {
    REQUIRE(file.variants[v].variant == twin.variants[v].variant);
    REQUIRE(file.variants[v].schedules == twin.variants[v].schedules);
    REQUIRE(file.variants[v].counts == twin.variants[v].counts);
  }
  REQUIRE(file.shortest.has_value() == twin.shortest.has_value());
  if (twin.shortest) {
    REQUIRE(file.shortest->plan_index == twin.shortest->plan_index);
    REQUIRE(file.shortest->picks == twin.shortest->picks);
    REQUIRE(file.shortest->steps == twin.shortest->steps);
    REQUIRE(file.shortest->outcome == twin.shortest->outcome);
    REQUIRE(file.shortest->figures.reserved == twin.shortest->figures.reserved);
    REQUIRE(file.shortest->figures.inbox_rows == twin.shortest->figures.inbox_rows);
    REQUIRE(file.shortest->figures.emails_sent == twin.shortest->figures.emails_sent);
    REQUIRE(file.shortest->figures.flagged == twin.shortest->figures.flagged);
    REQUIRE(file.shortest->figures.deliveries == twin.shortest->figures.deliveries);
  }
}

}  // namespace

TEST_CASE("each built-in consumer's file is explored exactly like its C++ twin", "[files]") {
  // Every row of the matrix. The cache rows name their second store (second-store =
  // "cache"), kept in the explorer's second file as their twins keep it; email-reconcile
  // asks the provider (ask-provider) and branches on its answer (go-to, end).
  // Every row of the matrix: the rows are the explorer's table, not a list kept here (the
  // test below holds the table and the folder equal).
  for (const Strategy* twin : AllStrategies()) {
    const std::string name(twin->name);
    INFO(name);
    files::FileStrategy file(files::LoadConsumerFile(Example(name)));
    const Strategy* extra[] = {&file.strategy()};
    Explorer explorer(ExploreOptions{}, extra);
    file.LearnCrashPoints(explorer);
    REQUIRE(std::vector<std::string>(file.strategy().crash_points.begin(),
                                     file.strategy().crash_points.end()) ==
            std::vector<std::string>(twin->crash_points.begin(), twin->crash_points.end()));
    REQUIRE(file.strategy().effect == twin->effect);
    REQUIRE(file.strategy().partner == twin->partner);
    REQUIRE(file.strategy().summary == twin->summary);
    for (const Fault* f : AllFaults()) {
      CellResult a = explorer.ExploreCell(*twin, *f);
      CellResult b = explorer.ExploreCell(file.strategy(), *f);
      RequireSameCell(a, b);
    }
  }
}

TEST_CASE("examples/consumers holds one file per row of the explorer's table, and no other",
          "[files]") {
  // The explorer's table (lib/explore/strategies.cpp) is the registry the scenario files'
  // `builtin` and `check` read; the example files are its rows written as files. Each row
  // has its file, named after it, which names itself the same; each file is a row.
  // Mutations caught: a row added to the table without its file, or a file added to (or
  // renamed in) the folder without its row: the two name lists differ.
  std::vector<std::string> rows;
  for (const Strategy* s : AllStrategies()) rows.emplace_back(s->name);
  std::vector<std::string> stems;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(DEDUPSIM_SOURCE_DIR) + "/examples/consumers")) {
    const std::filesystem::path& path = entry.path();
    if (path.extension() != ".toml") continue;
    stems.push_back(path.stem().string());
    CHECK(files::LoadConsumerFile(path.string()).name == path.stem().string());
  }
  std::sort(rows.begin(), rows.end());
  std::sort(stems.begin(), stems.end());
  CHECK(stems == rows);
  CHECK(std::adjacent_find(rows.begin(), rows.end()) == rows.end());  // no name twice
}

TEST_CASE("each consumer the bench and the soak run is a stock row of the explorer's table",
          "[files]") {
  // bench/strategy.h keeps its own list of names (BenchStrategy, read by bench and soak);
  // until it reads the explorer's table, a name there must name a row here, and a row
  // whose effect is the stock the bench's workload reserves. raw is the bench's baseline,
  // the inbox's SQL on the C API: no consumer, no row.
  // Mutation caught: a bench name spelled apart from its row (ToString(kInbox) "inbox2").
  for (BenchStrategy b : AllBenchStrategies()) {
    if (b == BenchStrategy()) continue;
    INFO(ToString(b));
    const Strategy* row = FindStrategy(ToString(b));
    REQUIRE(row != nullptr);
    CHECK(row->effect == "stock");
  }
}

}  // namespace dedupsim::testing::files_equivalence_test

namespace dedupsim::testing::files_equivalence_test {

namespace {

// What the deliveries of a run said: each ack's outcome word and each send's result, in
// the order they happened, with the instance.
std::vector<std::string> Words(const std::vector<TraceEvent>& events) {
  std::vector<std::string> out;
  for (const TraceEvent& e : events) {
    if (e.kind == "ack" || e.kind == "send")
      out.push_back(e.instance + " " + e.kind + " " + (e.kind == "ack" ? e.detail : e.result));
  }
  return out;
}

}  // namespace

TEST_CASE("a keyed send-email turned away ends the delivery skipped, as its C++ twin says",
          "[files]") {
  // email-reconcile: a redelivery that finds the record in progress, asks the provider
  // before the first copy sent, and then sends with the same key after it did, is told
  // "already sent": the twin reports AlreadySent (Skipped), and so must the file, in every
  // schedule of the crash and concurrent faults, word for word.
  using namespace dedupsim::explore;
  using dedupsim::explore::Strategy;
  const Strategy* twin = FindStrategy("email-reconcile");
  files::FileStrategy file(files::LoadConsumerFile(Example("email-reconcile")));
  const Strategy* extra[] = {&file.strategy()};
  Explorer explorer(ExploreOptions{}, extra);
  file.LearnCrashPoints(explorer);
  int turned_away = 0;
  for (const char* fault : {"crash", "concurrent"}) {
    std::vector<Plan> twin_plans = explorer.Plans(*twin, *FindFault(fault));
    std::vector<Plan> file_plans = explorer.Plans(file.strategy(), *FindFault(fault));
    REQUIRE(twin_plans.size() == file_plans.size());
    for (size_t p = 0; p < twin_plans.size(); ++p) {
      std::vector<std::vector<int>> schedules;
      explorer.ForEachSchedule(twin_plans[p],
                               [&](const ScheduleResult& run) { schedules.push_back(run.picks); });
      for (const std::vector<int>& picks : schedules) {
        Recorder twin_trace;
        Recorder file_trace;
        REQUIRE(explorer.RunExactly(twin_plans[p], picks, &twin_trace));
        REQUIRE(explorer.RunExactly(file_plans[p], picks, &file_trace));
        std::vector<std::string> want = Words(twin_trace.Events());
        INFO(fault << " " << twin_plans[p].variant);
        CHECK(Words(file_trace.Events()) == want);
        turned_away +=
            static_cast<int>(std::count_if(want.begin(), want.end(), [](const std::string& w) {
              return w.ends_with(" send AlreadySent");
            }));
      }
    }
  }
  // The case this is about happens: some delivery was turned away and ended skipped.
  CHECK(turned_away > 0);
}

}  // namespace dedupsim::testing::files_equivalence_test
