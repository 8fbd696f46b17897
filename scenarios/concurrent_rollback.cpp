// concurrent-rollback: two copies at once, and the first dies before its commit. Its claim
// rolls back with its work, so the second copy, which waited for it, claims the key and
// does the work: the post's "had the first rolled back, the second would have processed it".
#include <fmt/format.h>

#include "common.h"
#include "concurrency.h"
#include "scenarios.h"

namespace dedupsim {
namespace {

Outcome Run(ScenarioEnv& env) {
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  PairOutcome pair = RunInboxPair(env, message, message, /*first_rolls_back=*/true);
  StockItem after = CurrentStock(env, dune);
  Outcome out;
  out.figures["instances"] = ToString(env.options.instances);
  out.figures["holdMs"] = env.options.hold.count();
  out.figures["staggerMs"] = env.options.stagger.count();
  out.figures["processed"] = {pair.first_processed, pair.second_processed};
  out.figures["reserved"] = after.reserved;
  AddWaitFigures(pair, out.figures);
  out.line = fmt::format(
      "{}two copies at once, the first rolls back -> processed: {}, {}; {} reserved: {}; second "
      "waited for the first: {}",
      TagColumn("inbox"), CsBool(pair.first_processed), CsBool(pair.second_processed), after.title,
      after.reserved, CsBool(pair.SecondWaited()));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  // The first's claim is gone with its rollback; the second does the work, once.
  nlohmann::ordered_json expected = {{"processed", {false, true}}, {"reserved", o.quantity}};
  expected.update(ExpectedWait(o));
  return expected;
}

}  // namespace

const Scenario kConcurrentRollbackScenario{
    .name = "concurrent-rollback",
    .tag = "inbox",
    .summary = "two copies at once, the first rolls back: the second, which waited, processes it",
    .in_post = false,
    .traits = kHasInstances | kHasHold | kAnyBackend,
    .run = &Run,
    .expected = &Expected,
    .lesson =
        "The timing of concurrent: instance A claims the key and holds its transaction open at "
        "BeforeCommit; instance B, with a copy of the same message, starts later and waits. This "
        "time A dies at BeforeCommit instead of committing.\n"
        "\n"
        "A's Inbox row was never committed, so it disappears with A's work. B's INSERT, which was "
        "waiting, now succeeds: B claims the key, reserves the stock and commits. The message is "
        "processed exactly once, by the copy that survived.\n"
        "\n"
        "This is why the second copy must wait instead of giving up: until the first commits, "
        "nobody knows whether it will. On SQLite B waits for the whole database; on PostgreSQL "
        "(--backend postgres) it waits on A's key alone.",
    .hook_points =
        "BeforeCommit: instance A holds there for --hold-ms, then dies (its transaction rolls "
        "back)",
    .try_next =
        "Watch the server make B wait on A's key, then let it through:\n"
        "  dedupsim run concurrent-rollback --backend postgres --format json",
};

}  // namespace dedupsim
