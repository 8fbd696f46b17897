// naive: the same message delivered twice to a consumer with no dedup at all.
#include <fmt/format.h>

#include "common.h"
#include "consumers/naive.h"
#include "scenarios.h"

namespace dedupsim {
namespace {

Outcome Run(ScenarioEnv& env) {
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  for (int delivery = 0; delivery < env.options.deliveries; ++delivery) {
    Connection db = OpenTraced(env, "A");
    NaiveReserveStock(db).Handle(message);
  }
  StockItem after = CurrentStock(env, dune);
  Outcome out;
  out.figures["deliveries"] = env.options.deliveries;
  out.figures["reserved"] = after.reserved;
  out.line = fmt::format("{}{} -> {} reserved: {}", TagColumn("naive"),
                         DeliveredPhrase(env.options.deliveries), after.title, after.reserved);
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  return {{"reserved", o.quantity * o.deliveries}};  // every delivery reserves again
}

}  // namespace

const Scenario kNaiveScenario{
    "naive", "naive", "the same message delivered twice to a consumer with no dedup: reserved twice",
    true, kRepeatsDelivery, &Run, &Expected};

}  // namespace dedupsim
