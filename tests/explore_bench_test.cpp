// The figures in docs/explore.md's speed section. Hidden (not run by ctest): run them with
//   ./build/tests/dedupsim_tests "[.bench]"
// Each configuration explores the full default matrix three times; the best run counts,
// since the machine is shared and a slower run measures the neighbours.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>

#include "explore/explorer.h"
#include "explore/strategies.h"
#include "sqlite/database.h"
#include "sqlite/schema.h"
#include "sqlite/statement.h"

namespace explore_bench_test {

using namespace dedupsim;
using namespace dedupsim::explore;

namespace {

struct Config {
  const char* name;
  ExploreOptions options;
};

}  // namespace

TEST_CASE("explore speed by configuration", "[.bench]") {
  const Config configs[] = {
      {"wal, synchronous off, connections kept (default)", {}},
      {"wal, synchronous normal", {.synchronous = Synchronous::kNormal}},
      {"wal, synchronous full", {.synchronous = Synchronous::kFull}},
      {"delete journal, synchronous off", {.journal = JournalMode::kDelete}},
      {"delete journal, synchronous full",
       {.journal = JournalMode::kDelete, .synchronous = Synchronous::kFull}},
      {"wal, synchronous off, a new connection per run", {.reuse_connections = false}},
  };
  int64_t schedules = -1;
  for (const Config& config : configs) {
    Explorer explorer(config.options);
    double best = 1e18;
    int64_t steps = 0;
    for (int i = 0; i < 3; ++i) {
      MatrixResult m = explorer.ExploreMatrix(AllStrategies(), AllFaults());
      best = std::min(best, m.elapsed_ms);
      steps = m.steps;
      if (schedules < 0) schedules = m.schedules;
      CHECK(m.schedules == schedules);  // the settings change the speed, never the result
    }
    fmt::print("{:<52} {:>7.0f} ms  {:>6.0f} schedules/s  {:>6.0f} steps/s\n", config.name, best,
               static_cast<double>(schedules) * 1000.0 / best,
               static_cast<double>(steps) * 1000.0 / best);
  }
}

TEST_CASE("resetting the database against creating a fresh one", "[.bench]") {
  const int n = 300;
  DatabaseSettings settings{JournalMode::kWal, Synchronous::kOff, std::chrono::milliseconds(2000)};
  auto time = [](auto&& body) {
    auto start = std::chrono::steady_clock::now();
    body();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  };
  DatabaseFile kept = DatabaseFile::CreateTemporary(settings);
  Connection c = kept.Connect();
  double reset = time([&] {
    for (int i = 0; i < n; ++i) {
      c.Cached("BEGIN IMMEDIATE").Execute();
      c.Cached("DELETE FROM Inbox").Execute();
      c.Cached("DELETE FROM StockItems").Execute();
      c.Cached("INSERT INTO StockItems (BookId, Title, OnHand, Reserved) VALUES ('b', 'Dune', 10, 0)")
          .Execute();
      c.Cached("COMMIT").Execute();
    }
  });
  double fresh = time([&] {
    for (int i = 0; i < n; ++i) {
      DatabaseFile f = DatabaseFile::CreateTemporary(settings);
      Connection d = f.Connect();
      ResetInventory(d, StockItem{"b", "Dune", 10, 0});
    }
  });
  fmt::print("reset by DELETE: {:.0f} us per run; a fresh temporary file: {:.0f} us per run\n",
             reset / n, fresh / n);
  CHECK(reset > 0);
}

}  // namespace explore_bench_test
