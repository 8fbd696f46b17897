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
  // Every ack but the last is lost, so the broker delivers the message `deliveries` times.
  const int deliveries = env.options.deliveries;
  std::unique_ptr<Broker> broker = OpenBroker(env, {.max_delivery_count = deliveries});
  broker->Send(message);
  DeliveryLog log;
  std::vector<bool> processed;
  Drain(*broker, [&](const Delivery& d) {
    std::unique_ptr<Store> store = OpenStore(env, "A");  // the broker's delivery
    processed.push_back(IdempotentReserveStock(*store, env.clock).Handle(d.message));
    NoteProcessed(*store, processed.back(), ReservedVerdict(env, dune, env.options.quantity));
    log.Add(d);
    return d.delivery_count < deliveries ? Verdict{Disposition::kAckLost}
                                         : Verdict{Disposition::kAck};
  });
  StockItem after = CurrentStock(env, dune);
  const int delivered = static_cast<int>(log.size());
  std::vector<std::string> words;
  for (bool p : processed) words.emplace_back(CsBool(p));
  Outcome out;
  out.figures["deliveries"] = delivered;
  out.figures["processed"] = processed;
  out.figures["reserved"] = after.reserved;
  out.figures["broker"] = log.Figures(*broker);
  out.line = fmt::format("{}{} -> processed: {}; {}", TagColumn("inbox"),
                         DeliveredPhrase(delivered), fmt::join(words, ", "),
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
    .traits = kRepeatsDelivery | kAnyBackend | kRealBroker,
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
const LessonRegistration kInboxLesson{kInboxScenario, {.rank = 30, .theme = Theme::kPostsSix}};

}  // namespace dedupsim
