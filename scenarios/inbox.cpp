// inbox: the Inbox row and the stock update in one transaction, the key claimed first;
// the second delivery is skipped as a duplicate.
#include <fmt/format.h>

#include <vector>

#include "common.h"
#include "consumers/idempotent.h"
#include "scenarios.h"

namespace dedupsim {
namespace inbox_file {
namespace {

Outcome Run(ScenarioEnv& env) {
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  std::vector<bool> processed;
  DeliverWithLostAcks(env, message, env.options.deliveries, [&](Store& store, int) {
    processed.push_back(IdempotentReserveStock(store, env.clock).Handle(message));
    NoteProcessed(store, processed.back(), ReservedVerdict(env, dune, env.options.quantity));
  });
  StockItem after = CurrentStock(env, dune);
  std::vector<std::string> words;
  for (bool p : processed) words.emplace_back(CsBool(p));
  Outcome out;
  out.figures["deliveries"] = env.options.deliveries;
  out.figures["processed"] = processed;
  out.figures["reserved"] = after.reserved;
  out.line = fmt::format("{}{} -> processed: {}; {}", TagColumn("inbox"),
                         DeliveredPhrase(env.options.deliveries), fmt::join(words, ", "),
                         JudgedReserved(after.title, after.reserved, env.options.quantity));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  std::vector<bool> processed(static_cast<size_t>(o.deliveries), false);
  if (!processed.empty()) processed[0] = true;  // only the first delivery does the work
  return {{"processed", processed}, {"reserved", o.quantity}};
}

}  // namespace
}  // namespace inbox_file

const Scenario kInboxScenario{
    .name = "inbox",
    .tag = "inbox",
    .summary = "inbox row and stock update in one transaction: the second delivery is skipped",
    .in_post = true,
    .traits = kRepeatsDelivery | kAnyBackend,
    .run = &inbox_file::Run,
    .expected = &inbox_file::Expected,
    .lesson =
        "The Inbox pattern writes the dedup record and the work in one database transaction, and writes the record first. The record is keyed on (MessageId, Consumer), so the database itself refuses a second row for the same message and consumer.\n"
        "\n"
        "The first delivery inserts its Inbox row, reserves the stock and commits. The second delivery's insert fails with SQLITE_CONSTRAINT_PRIMARYKEY (extended code 1555). The consumer reads that as \"already done\", rolls back, and reports processed: False. That is a success: the message should be acknowledged, not retried.",
    .hook_points = "BeforeCommit (unused here; see crash-before-commit)",
    .try_next =
        "Deliver the message five times: only the first does the work:\n"
        "  dedupsim run inbox --deliveries 5 --format json",
};

}  // namespace dedupsim
