// naive: the same message delivered twice to a consumer with no dedup at all.
#include <fmt/format.h>

#include "common.h"
#include "consumers/naive.h"
#include "scenarios.h"

namespace dedupsim {
namespace naive_file {
namespace {

Outcome Run(ScenarioEnv& env) {
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  // Every ack but the last is lost, so the broker delivers the message `deliveries` times.
  const int deliveries = env.options.deliveries;
  std::unique_ptr<Broker> broker = OpenBroker(env, {.max_delivery_count = deliveries});
  broker->Send(message);
  DeliveryLog log;
  Drain(*broker, [&](const Delivery& d) {
    std::unique_ptr<Store> store = OpenStore(env, "A");  // the broker's delivery
    // Each delivery's outcome is read from the database: Processed when Reserved grew.
    const int64_t before = CurrentStock(env, dune).reserved;
    NaiveReserveStock(*store).Handle(d.message);
    const bool took_effect = CurrentStock(env, dune).reserved > before;
    NoteOutcome(*store, took_effect ? "Processed" : "changed nothing",
                ReservedVerdict(env, dune, env.options.quantity));
    log.Add(d);
    return d.delivery_count < deliveries ? Verdict{Disposition::kAckLost}
                                         : Verdict{Disposition::kAck};
  });
  StockItem after = CurrentStock(env, dune);
  const int delivered = static_cast<int>(log.size());
  Outcome out;
  out.figures["deliveries"] = delivered;
  out.figures["reserved"] = after.reserved;
  out.figures["broker"] = log.Figures(*broker);
  out.line = fmt::format("{}{} -> {}", TagColumn("naive"), DeliveredPhrase(delivered),
                         JudgedReserved(after.title, after.reserved, env.options.quantity));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  return {{"deliveries", o.deliveries},
          {"reserved", o.quantity * o.deliveries}};  // every delivery reserves again
}

}  // namespace
}  // namespace naive_file

const Scenario kNaiveScenario{
    .name = "naive",
    .tag = "naive",
    .summary = "the same message delivered twice to a consumer with no dedup: reserved twice",
    .in_post = true,
    .traits = kRepeatsDelivery | kAnyBackend | kRealBroker,
    .run = &naive_file::Run,
    .expected = &naive_file::Expected,
    .lesson =
        "The broker promises at-least-once delivery. Here the consumer handled the order, the acknowledgement was lost on the way back, and the broker handed over the very same message a second time. On --broker nats or rabbitmq the loss is real: the ack is never sent, and the broker redelivers on its own (NATS once AckWait has passed, RabbitMQ when the consumer's channel closes).\n"
        "\n"
        "The naive consumer adds the order's quantity to Reserved on every delivery. An increment is commutative, so the order of deliveries does not matter, but it is not idempotent: applying it twice gives a different total. A two-book order ends up holding four books, and the extra two look unsellable.\n"
        "\n"
        "Every later scenario is a way to make a repeated delivery harmless.",
    .hook_points = "none: the consumer runs straight through",
    .try_next =
        "Deliver it more often and watch Reserved grow by the quantity each time:\n"
        "  dedupsim run naive --deliveries 3 --quantity 5",
};
const LessonRegistration kNaiveLesson{kNaiveScenario, {.rank = 10, .theme = Theme::kPostsSix}};

}  // namespace dedupsim
