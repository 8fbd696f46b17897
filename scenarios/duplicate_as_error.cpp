// duplicate-as-error: a consumer that throws on a duplicate is redelivered until the
// broker gives up and dead-letters it; acking the duplicate ends the story at once.
#include <fmt/format.h>

#include "world/broker/broker.h"
#include "common.h"
#include "consumers/idempotent.h"
#include "consumers/throw_on_duplicate.h"
#include "scenarios.h"

namespace dedupsim {
namespace duplicate_as_error_file {
namespace {

struct Part {
  int64_t deliveries = 0;
  int64_t dead_lettered = 0;
  int64_t reserved = 0;
};

// The first delivery is processed but its ack is lost; later ones go to handle, which
// says whether the consumer acked (true) or threw (false).
template <typename Handle>
Part Deliver(ScenarioEnv& env, const char* title, Handle handle) {
  env.recorder.BeginPart(title);
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  std::unique_ptr<Broker> broker = OpenBroker(env, BrokerOptions{.max_delivery_count = env.options.max_deliveries});
  // The message is handled fine by its first delivery: a dead letter for it is wrong in every
  // view, as on the line.
  broker->JudgeDeadLetters(kVerdictWrong);
  broker->Send(message);
  Part part;
  part.deliveries = Drain(*broker, [&](const Delivery& d) {
    std::unique_ptr<Store> store = OpenStore(env, "A");
    bool acked = handle(*store, d.message);
    if (d.delivery_count == 1) return Verdict{Disposition::kAckLost};
    return Verdict{acked ? Disposition::kAck : Disposition::kAbandon};
  });
  part.dead_lettered = broker->stats().dead_lettered;
  part.reserved = CurrentStock(env, dune).reserved;
  return part;
}

// The message was handled fine in both runs (its first delivery reserved the stock): a dead
// letter for it is wrong, an alert somebody has to chase for an order that was right.
std::string Describe(const Part& p, int64_t quantity) {
  const std::string dead = fmt::format("dead-lettered: {}", p.dead_lettered);
  return fmt::format("deliveries: {}, {}, {}", p.deliveries, Judged(dead, p.dead_lettered == 0),
                     JudgedReserved("Dune", p.reserved, quantity));
}

Outcome Run(ScenarioEnv& env) {
  Part thrown = Deliver(env, "duplicate thrown as an error", [&env](Store& store, const OrderPlaced& m) {
    try {
      ThrowOnDuplicateReserveStock(store, env.clock).Handle(m);
      return true;
    } catch (const DuplicateMessageError&) {
      return false;  // the broker sees a failed delivery
    }
  });
  Part skipped = Deliver(env, "duplicate skipped", [&env](Store& store, const OrderPlaced& m) {
    const bool processed = IdempotentReserveStock(store, env.clock).Handle(m);  // either way: ack
    // Right when the order took effect once, read back after the delivery's work.
    NoteProcessed(store, processed, ReservedVerdictApart(env, m));
    return true;
  });
  Outcome out;
  out.figures["maxDeliveries"] = env.options.max_deliveries;
  out.figures["throwDeliveries"] = thrown.deliveries;
  out.figures["throwDeadLettered"] = thrown.dead_lettered;
  out.figures["throwReserved"] = thrown.reserved;
  out.figures["skipDeliveries"] = skipped.deliveries;
  out.figures["skipDeadLettered"] = skipped.dead_lettered;
  out.figures["skipReserved"] = skipped.reserved;
  out.figures["reserved"] = thrown.reserved;
  out.line = fmt::format("{}ack lost, redelivered -> throw on duplicate: {}; ack and skip: {}",
                         TagColumn("duplicate-as-error"), Describe(thrown, env.options.quantity),
                         Describe(skipped, env.options.quantity));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  // With a limit of one, the lost ack alone sends the message to the dead-letter queue.
  const bool room_to_redeliver = o.max_deliveries >= 2;
  return {{"throwDeliveries", o.max_deliveries},
          {"throwDeadLettered", 1},
          {"throwReserved", o.quantity},
          {"skipDeliveries", room_to_redeliver ? 2 : 1},
          {"skipDeadLettered", room_to_redeliver ? 0 : 1},
          {"skipReserved", o.quantity},
          {"reserved", o.quantity}};
}

}  // namespace
}  // namespace duplicate_as_error_file

const Scenario kDuplicateAsErrorScenario{
    .name = "duplicate-as-error",
    .tag = "duplicate-as-error",
    .summary = "throwing on a duplicate: redelivered to the max delivery count, then dead-lettered",
    .in_post = false,
    .traits = kHasMaxDeliveries | kAnyBackend,
    .run = &duplicate_as_error_file::Run,
    .expected = &duplicate_as_error_file::Expected,
    .lesson =
        "The consumer does the work, but the ack is lost, so the broker delivers the message again. What the consumer does with that duplicate decides what happens next.\n"
        "\n"
        "The first consumer treats \"already processed\" as an error and throws. To the broker an exception is a failed delivery, so it puts the message back and tries again, and again, until the delivery count reaches the queue's maximum (--max-deliveries, 10 by default, as on Azure Service Bus). Then the message is moved to the dead-letter queue, where it will page someone at night for an order that was handled correctly the first time.\n"
        "\n"
        "The second consumer skips the duplicate and acks it. Skipping is a successful outcome: two deliveries, nothing dead-lettered. The stock is right in both cases; only the operational noise differs.",
    .hook_points = "none: the broker's redeliveries drive the lesson",
    .try_next =
        "A lower delivery limit reaches the dead-letter queue sooner:\n"
        "  dedupsim run duplicate-as-error --max-deliveries 3 --trace",
};
const LessonRegistration kDuplicateAsErrorLesson{kDuplicateAsErrorScenario,
                                                 {.rank = 150, .theme = Theme::kBroker}};

}  // namespace dedupsim
