// concurrent-rollback: two copies at once, and the first fails after claiming the key. Its
// rollback takes the Inbox row with it, so the second copy, which was waiting for the write
// lock, finds no row and processes the message itself.
#include <fmt/format.h>

#include <stdexcept>
#include <thread>

#include "common.h"
#include "concurrency.h"
#include "consumers/idempotent.h"
#include "lesson/instances.h"
#include "scenarios.h"

namespace dedupsim {
namespace concurrent_rollback_file {
namespace {

// The first copy's work fails after it claimed the key and reserved: a real exception out
// of the handler, which its transaction answers with a rollback.
class WorkFailed : public std::runtime_error {
 public:
  WorkFailed() : std::runtime_error("its work threw after its claim") {}
};

// One copy: the inbox consumer; with fail set, its work throws at BeforeCommit after hold.
StoreTask Copy(ScenarioEnv& env, const OrderPlaced& message, const char* name, bool fail) {
  return {name,
          {},
          [&env, message, fail](Store& store, const Hook& hold_point) -> nlohmann::json {
            IdempotentReserveStock consumer(store, env.clock);
            consumer.before_commit = [hold_point, fail, &store] {
              if (hold_point) hold_point();  // the first copy holds here; the second has none
              if (!fail) return;
              // Said as it throws, inside its transaction: before its ROLLBACK lets the
              // waiting copy on, so the two copies' steps keep one order whatever the
              // scheduler does (noted after the rollback, it raced the waiter's statement).
              store.Note("fail", WorkFailed().what(), "");
              throw WorkFailed();
            };
            nlohmann::json report = {{"processed", false}, {"failed", false}};
            try {
              report["processed"] = consumer.Handle(message);
            } catch (const WorkFailed&) {
              // The transaction's destructor has rolled back: Inbox row and stock update.
              report["failed"] = true;
              report["rolledBack"] = !store.InTransaction();
            }
            return report;
          }};
}

Outcome Run(ScenarioEnv& env) {
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  PairOutcome pair =
      RunStorePair(env, Copy(env, message, "A", true), Copy(env, message, "B", false));
  pair.first_processed = pair.first.value["processed"].get<bool>();
  pair.second_processed = pair.second.value["processed"].get<bool>();
  const bool first_failed = pair.first.value["failed"].get<bool>();
  StockItem after = CurrentStock(env, dune);
  const int64_t inbox_rows = CurrentRows(env, "Inbox");

  Outcome out;
  out.figures["instances"] = ToString(env.options.instances);
  out.figures["holdMs"] = env.options.hold.count();
  out.figures["staggerMs"] = env.options.stagger.count();
  out.figures["processed"] = {pair.first_processed, pair.second_processed};
  out.figures["firstFailed"] = first_failed;
  out.figures["inboxRows"] = inbox_rows;
  out.figures["reserved"] = after.reserved;
  AddWaitFigures(env, pair, out.figures);
  out.line = fmt::format(
      "{}two copies at once, the first {} -> processed: {}, {}; inbox rows: {}; {}; "
      "second waited for the first: {}",
      TagColumn("concurrent-rollback"),
      first_failed ? "fails after claiming" : "never reached its failing work",
      CsBool(pair.first_processed), CsBool(pair.second_processed), inbox_rows,
      JudgedReserved(after.title, after.reserved, env.options.quantity), CsBool(pair.SecondWaited()));
  // On a server database the wait is on the key A had claimed, not the file: say so.
  if (pair.watched) out.line += fmt::format("; waited on: {}", pair.SecondWaitedOn());
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  // Whoever claims first, the message is processed once, by B: A either fails after
  // claiming (and B, waiting or later, takes the key) or finds B's row and skips.
  nlohmann::ordered_json expected = {
      {"processed", {false, true}}, {"inboxRows", 1}, {"reserved", o.quantity}};
  // With a clear head start, A claims first and so reaches its failing work.
  if (o.stagger >= std::chrono::milliseconds(20)) expected["firstFailed"] = true;
  expected.update(ExpectedWait(o));
  return expected;
}

}  // namespace
}  // namespace concurrent_rollback_file

const Scenario kConcurrentRollbackScenario{
    .name = "concurrent-rollback",
    .tag = "concurrent-rollback",
    .summary =
        "two copies at once, the first rolls back after claiming: the waiting second processes",
    .in_post = false,
    .traits = kHasInstances | kHasHold | kAnyBackend,
    .run = &concurrent_rollback_file::Run,
    .expected = &concurrent_rollback_file::Expected,
    .lesson =
        "The concurrent scenario again, two copies of one message in instances A and B, but this "
        "time A's work fails after it has claimed the key: it inserted the Inbox row and reserved "
        "the stock, holds its transaction (--hold-ms), then its handler throws.\n"
        "\n"
        "The claim was part of A's transaction, so the rollback takes it back together with the "
        "stock update. B, which started later (--stagger-ms) and was waiting for the write lock at "
        "its Inbox insert, now gets the lock, finds no row for the key, and processes the message: "
        "Dune is reserved once, by B.\n"
        "\n"
        "This is why the claim must live in the same transaction as the work. A claim committed on "
        "its own (record-first) would survive A's failure, and B would skip a message nobody "
        "processed. Here the database forgets a failed attempt completely, and the copy that was "
        "kept waiting becomes the one that does the work.\n"
        "\n"
        "With --backend postgres the wait is on the key, and the server shows it: B's Inbox "
        "INSERT waits on A's uncommitted row for that key (pg_blocking_pids names A's backend), "
        "A rolls back, and the same INSERT returns without error, no 23505. Had the first "
        "transaction committed, it would have failed as in concurrent; it rolled back, so the "
        "second processed the message.",
    .hook_points =
        "BeforeCommit: instance A holds its open transaction for --hold-ms, then its work throws",
    .try_next =
        "Start B after A has already rolled back: B no longer waits, and still processes:\n"
        "  dedupsim run concurrent-rollback --hold-ms 0 --trace\n"
        "Compare with the claim committed ahead of the work, which a failure leaves behind:\n"
        "  dedupsim run record-first --trace",
};
const LessonRegistration kConcurrentRollbackLesson{kConcurrentRollbackScenario,
                                                   {.rank = 200, .theme = Theme::kConcurrency}};

}  // namespace dedupsim
