// correlation-key: deduplicating on the correlation id (the order's id) instead of the
// message id. A redelivered OrderPlaced is caught either way, but the order's
// OrderCancelled, a different message about the same order, is dropped as a "duplicate".
#include <fmt/format.h>

#include <map>

#include "world/broker/broker.h"
#include "common.h"
#include "consumers/keyed.h"
#include "scenarios.h"

namespace dedupsim {
namespace correlation_key_file {
namespace {

struct Part {
  std::vector<bool> processed;
  std::vector<std::string> handled;  // the type of each delivery, in order
  int64_t inbox_rows = 0;
  int64_t reserved = 0;
};

// OrderPlaced (its first ack lost, so it is delivered twice), then OrderCancelled for the
// same order; the consumer keys its Inbox row on what key_of returns.
template <typename KeyOf>
Part Deliver(ScenarioEnv& env, const char* title, KeyOf key_of) {
  env.recorder.BeginPart(title);
  StockItem dune = Restock(env);
  OrderPlaced placed = NewOrder(env, dune);
  OrderPlaced cancelled{env.ids.Next(), placed.order_id, placed.book_id, placed.quantity};
  std::map<std::string, OrderEventType> types{{placed.message_id, OrderEventType::kPlaced},
                                              {cancelled.message_id, OrderEventType::kCancelled}};
  std::unique_ptr<Broker> broker = OpenBroker(env, BrokerOptions{});
  broker->Send(placed);
  broker->Send(cancelled);
  Part part;
  Drain(*broker, [&](const Delivery& d) {
    OrderEvent event{types.at(d.message.message_id), d.message};
    std::unique_ptr<Store> store = OpenStore(env, "A");
    store->Note("message", TypeName(event.type), "key " + key_of(event));
    part.processed.push_back(KeyedReserveStock(*store, env.clock).Handle(event, key_of(event)));
    part.handled.emplace_back(TypeName(event.type));
    const bool first_placed = event.type == OrderEventType::kPlaced && d.delivery_count == 1;
    return first_placed ? Verdict{Disposition::kAckLost} : Verdict{Disposition::kAck};
  });
  part.inbox_rows = CurrentRows(env, "Inbox");
  part.reserved = CurrentStock(env, dune).reserved;
  return part;
}

nlohmann::ordered_json ToJson(const Part& p) {
  return {{"deliveries", p.handled},
          {"processed", p.processed},
          {"inboxRows", p.inbox_rows},
          {"reserved", p.reserved}};
}

Outcome Run(ScenarioEnv& env) {
  Part by_order =
      Deliver(env, "key OrderId", [](const OrderEvent& e) { return e.body.order_id; });
  Part by_message =
      Deliver(env, "key MessageId", [](const OrderEvent& e) { return e.body.message_id; });
  Outcome out;
  out.figures["correlationKey"] = ToJson(by_order);
  out.figures["messageIdKey"] = ToJson(by_message);
  out.figures["reserved"] = by_order.reserved;
  out.line = fmt::format(
      "{}placed, redelivered, cancelled -> key OrderId: processed: {}; {}; key MessageId: "
      "processed: {}; {}",
      TagColumn("correlation-key"), BoolList(by_order.processed),
      // Placed then cancelled: nothing stays reserved.
      JudgedReserved("Dune", by_order.reserved, 0), BoolList(by_message.processed),
      JudgedReserved("Dune", by_message.reserved, 0));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  const nlohmann::json deliveries = {"OrderPlaced", "OrderPlaced", "OrderCancelled"};
  return {{"correlationKey",
           {{"deliveries", deliveries},
            {"processed", {true, false, false}},
            {"inboxRows", 1},
            {"reserved", o.quantity}}},
          {"messageIdKey",
           {{"deliveries", deliveries},
            {"processed", {true, false, true}},
            {"inboxRows", 2},
            {"reserved", 0}}},
          {"reserved", o.quantity}};
}

}  // namespace
}  // namespace correlation_key_file

const Scenario kCorrelationKeyScenario{
    .name = "correlation-key",
    .tag = "correlation-key",
    .summary = "keyed on the correlation id: the order's cancellation is dropped as a duplicate",
    .in_post = false,
    .traits = kAnyBackend,
    .run = &correlation_key_file::Run,
    .expected = &correlation_key_file::Expected,
    .lesson =
        "The key decides what counts as \"the same message\". Here one consumer handles an order's "
        "events: OrderPlaced reserves the books, OrderCancelled releases them. Both carry the "
        "order's id as their correlation id, and each has its own MessageId.\n"
        "\n"
        "Keyed on the correlation id, the consumer records the order's id when it handles "
        "OrderPlaced. The redelivered OrderPlaced is caught, as it should be. Then OrderCancelled "
        "arrives: a different message, but the same correlation id, so the Inbox insert fails on "
        "the key and the consumer skips it as a duplicate. The cancellation is lost and the books "
        "stay reserved for an order that no longer exists.\n"
        "\n"
        "Keyed on the MessageId, the same three deliveries come out right: the redelivery is "
        "skipped, the cancellation is handled, and nothing stays reserved. A correlation id groups "
        "the messages of one conversation; it does not identify any one of them.",
    .hook_points = "none: the broker's deliveries drive the lesson",
    .try_next =
        "Follow each delivery's key in the trace:\n"
        "  dedupsim run correlation-key --trace\n"
        "Another key that looks unique and is not: a value the broker assigns per delivery:\n"
        "  dedupsim run delivery-tag-key --trace",
};
const LessonRegistration kCorrelationKeyLesson{kCorrelationKeyScenario,
                                               {.rank = 260, .theme = Theme::kKeys}};

}  // namespace dedupsim
