// concurrent-different: two different messages at once, twice: both for the same book, then
// for different books. On SQLite the second waits both times, because a write lock covers
// the whole database file, not one key or row; then both are processed. (A row-locking
// database makes the second wait only in the first case, on the book's row: see
// docs/locking.md for what was measured on PostgreSQL.)
#include <fmt/format.h>

#include "common.h"
#include "concurrency.h"
#include "scenarios.h"

namespace dedupsim {
namespace concurrent_different_file {
namespace {

nlohmann::ordered_json Expected(const RunOptions& o);

// Stocks a second book beside Dune, after Restock.
StockItem AddBook(ScenarioEnv& env, const std::string& title) {
  StockItem book{env.ids.Next(), title, 10, 0};
  AddStock(env, book);
  return book;
}

Outcome Run(ScenarioEnv& env) {
  // Same book: two orders for Dune.
  env.recorder.BeginPart("same book");
  StockItem dune = Restock(env);
  PairOutcome same = RunInboxPair(env, NewOrder(env, dune), NewOrder(env, dune));
  StockItem after = CurrentStock(env, dune);

  // Different books: A orders Dune, B orders Emma.
  env.recorder.BeginPart("different books");
  dune = Restock(env);
  StockItem emma = AddBook(env, "Emma");
  PairOutcome apart = RunInboxPair(env, NewOrder(env, dune), NewOrder(env, emma));
  StockItem dune_apart = CurrentStock(env, dune);
  StockItem emma_apart = CurrentStock(env, emma);

  Outcome out;
  out.figures["instances"] = ToString(env.options.instances);
  out.figures["holdMs"] = env.options.hold.count();
  out.figures["staggerMs"] = env.options.stagger.count();
  out.figures["processed"] = {same.first_processed, same.second_processed};
  out.figures["reserved"] = after.reserved;
  if (!same.second_sqlstate.empty()) out.figures["secondSqlstate"] = same.second_sqlstate;
  AddWaitFigures(env, same, out.figures);
  out.figures["differentBooksProcessed"] = {apart.first_processed, apart.second_processed};
  out.figures["differentBooksReserved"] = {dune_apart.reserved, emma_apart.reserved};
  AddWaitFigures(env, apart, out.figures, "differentBooks");
  out.line = fmt::format(
      "{}two different messages at once -> same book: processed: {}, {}; {}; second waited for "
      "the first: {}; different books: processed: {}, {}; {}, {}; second waited for the first: {}",
      TagColumn("concurrent-different"), CsBool(same.first_processed),
      CsBool(same.second_processed),
      // Two orders reserved are right. When the second failed with a serialization failure
      // (above READ COMMITTED, on a server) its order waits for a redelivery this run does
      // not make: the first order's figure alone is neither right nor wrong, so not judged.
      same.second_sqlstate.empty()
          ? JudgedReserved(after.title, after.reserved, 2 * env.options.quantity)
          : fmt::format("{} reserved: {}", after.title, after.reserved),
      CsBool(same.SecondWaited()) +
          // On a server database the wait is on a row or a key, not the file: say which,
          // in the part it belongs to.
          (same.watched ? fmt::format(" (on: {})", same.SecondWaitedOn()) : std::string()) +
          (same.second_sqlstate.empty()
               ? std::string()
               : fmt::format(", then its update failed with {} (serialization failure, {})",
                             same.second_sqlstate, same.isolation)), CsBool(apart.first_processed), CsBool(apart.second_processed),
      JudgedReserved(dune_apart.title, dune_apart.reserved, env.options.quantity),
      JudgedReserved(emma_apart.title, emma_apart.reserved, env.options.quantity),
      CsBool(apart.SecondWaited()));
  // A server locks rows and keys, not the file: the second order, for another book under
  // another key, has nothing to wait for there.
  if (env.backend.name() != "sqlite") {
    out.expected = Expected(env.options);
    out.expected["differentBooksSecondWaited"] = false;
    // Above READ COMMITTED the second order for Dune, begun before the first committed,
    // updates a row changed after its snapshot: the server refuses it (40001).
    if (SecondMeetsSerializationFailure(env, same.isolation)) {
      out.expected["processed"] = {true, false};
      out.expected["reserved"] = env.options.quantity;
      out.expected["secondSqlstate"] = "40001";
    }
  }
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  nlohmann::ordered_json expected = {{"processed", {true, true}}, {"reserved", 2 * o.quantity}};
  expected.update(ExpectedWait(o));
  // On SQLite the different book changes nothing: one writer per file.
  expected["differentBooksProcessed"] = {true, true};
  expected["differentBooksReserved"] = {o.quantity, o.quantity};
  expected["differentBooksSecondWaited"] = ExpectedWait(o)["secondWaited"];
  return expected;
}

}  // namespace
}  // namespace concurrent_different_file

const Scenario kConcurrentDifferentScenario{
    .name = "concurrent-different",
    .tag = "concurrent-different",
    .summary =
        "two different messages at once, same book and different books: SQLite makes the second "
        "wait both times (one writer per file)",
    .in_post = false,
    .traits = kHasInstances | kHasHold | kAnyBackend,
    .run = &concurrent_different_file::Run,
    .expected = &concurrent_different_file::Expected,
    .lesson =
        "The same timing as concurrent, but the two instances handle two different messages, so "
        "there is no key to fight over. It runs twice: both orders for the same book (Dune), then "
        "one for Dune and one for another book (Emma).\n"
        "\n"
        "SQLite allows one writer per database file: both times, B's first INSERT waits for A's "
        "whole transaction, however unrelated the rows. Both messages are processed in the end.\n"
        "\n"
        "A row-locking database (SQL Server, PostgreSQL) differs, and not the way one might hope: "
        "measured on PostgreSQL 15, B's Inbox INSERT of a different MessageId does not wait, but "
        "when both orders are for Dune, B's stock UPDATE waits on Dune's row lock until A commits. "
        "Only orders for different books do not wait at all. Throughput comes from short "
        "transactions either way.",
    .hook_points =
        "BeforeCommit: instance A holds its open transaction there for --hold-ms (in both pairs)",
    .try_next =
        "Run the instances as separate processes; the database lock works across them the same "
        "way:\n"
        "  dedupsim run concurrent-different --instances processes --trace",
};
const LessonRegistration kConcurrentDifferentLesson{kConcurrentDifferentScenario,
                                                    {.rank = 70, .theme = Theme::kConcurrency}};

}  // namespace dedupsim
