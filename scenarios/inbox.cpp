// inbox: the Inbox row and the stock update in one transaction, the key claimed first;
// the second delivery is skipped as a duplicate.
#include <fmt/format.h>

#include <vector>

#include "common.h"
#include "consumers/idempotent.h"
#include "scenarios.h"

namespace dedupsim {
namespace {

Outcome Run(ScenarioEnv& env) {
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  std::vector<bool> processed;
  for (int delivery = 0; delivery < env.options.deliveries; ++delivery) {
    Connection db = OpenTraced(env, "A");
    processed.push_back(IdempotentReserveStock(db, env.clock).Handle(message));
  }
  StockItem after = CurrentStock(env, dune);
  std::vector<std::string> words;
  for (bool p : processed) words.emplace_back(CsBool(p));
  Outcome out;
  out.figures["deliveries"] = env.options.deliveries;
  out.figures["processed"] = processed;
  out.figures["reserved"] = after.reserved;
  out.line = fmt::format("{}{} -> processed: {}; {} reserved: {}", TagColumn("inbox"),
                         DeliveredPhrase(env.options.deliveries), fmt::join(words, ", "),
                         after.title, after.reserved);
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  std::vector<bool> processed(static_cast<size_t>(o.deliveries), false);
  if (!processed.empty()) processed[0] = true;  // only the first delivery does the work
  return {{"processed", processed}, {"reserved", o.quantity}};
}

}  // namespace

const Scenario kInboxScenario{
    "inbox", "inbox",
    "inbox row and stock update in one transaction: the second delivery is skipped",
    true, kRepeatsDelivery, &Run, &Expected};

}  // namespace dedupsim
