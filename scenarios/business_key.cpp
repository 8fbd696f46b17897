// business-key: a dedup key derived from the business must identify the operation. Keyed on
// what the order asks for (its book and quantity), a redelivery is caught, but so is a second
// order alike: it is dropped as a "duplicate" and never reserved. Keyed on the order and
// its book, the same deliveries come out right.
#include <fmt/format.h>

#include <map>
#include <set>

#include "common.h"
#include "consumers/keyed.h"
#include "scenarios.h"
#include "world/broker/broker.h"

namespace dedupsim {
namespace business_key_file {
namespace {

struct Part {
  std::vector<bool> processed;
  std::vector<std::string> keys;  // the key of each delivery, in order
  int64_t inbox_rows = 0;
  int64_t reserved = 0;
};

// The first order (its first ack lost, so it is delivered twice), then a second order for the
// same book and quantity; the consumer keys its Inbox row on what key_of returns.
// title names the key, as the line does, for the pictures' sub-run.
template <typename KeyOf>
Part Deliver(ScenarioEnv& env, std::string_view title, KeyOf key_of) {
  env.recorder.BeginPart(std::string(title));
  StockItem dune = Restock(env);
  OrderPlaced first = NewOrder(env, dune);
  OrderPlaced second = NewOrder(env, dune);
  std::unique_ptr<Broker> broker = OpenBroker(env, BrokerOptions{});
  broker->Send(first);
  broker->Send(second);
  Part part;
  std::set<std::string> orders;  // the orders delivered so far
  Drain(*broker, [&](const Delivery& d) {
    const std::string key = key_of(d.message);
    std::unique_ptr<Store> store = OpenStore(env, "A");
    store->Note("message", "OrderPlaced", "key " + key);
    part.processed.push_back(
        KeyedReserveStock(*store, env.clock).Handle({OrderEventType::kPlaced, d.message}, key));
    // Right when every order delivered so far took effect once, read back now: the second
    // order dropped as a "duplicate" leaves the book one order short.
    orders.insert(d.message.order_id);
    NoteProcessed(*store, part.processed.back(),
                  ReservedVerdict(env, dune, d.message.quantity * std::ssize(orders)));
    part.keys.push_back(key);
    const bool first_delivery = d.message.message_id == first.message_id && d.delivery_count == 1;
    return first_delivery ? Verdict{Disposition::kAckLost} : Verdict{Disposition::kAck};
  });
  part.inbox_rows = CurrentRows(env, "Inbox");
  part.reserved = CurrentStock(env, dune).reserved;
  return part;
}

Outcome Run(ScenarioEnv& env) {
  Part by_content = Deliver(env, "key BookId+Quantity", [](const OrderPlaced& m) {
    return fmt::format("{}/{}", m.book_id, m.quantity);
  });
  Part by_order = Deliver(env, "key OrderId+BookId", [](const OrderPlaced& m) {
    return fmt::format("{}/{}", m.order_id, m.book_id);
  });
  Outcome out;
  out.figures["contentKey"] = {{"processed", by_content.processed},
                               {"inboxRows", by_content.inbox_rows},
                               {"reserved", by_content.reserved}};
  out.figures["orderKey"] = {{"processed", by_order.processed},
                             {"inboxRows", by_order.inbox_rows},
                             {"reserved", by_order.reserved}};
  out.figures["reserved"] = by_content.reserved;
  // Two orders of quantity each: reserved twice over when each took effect once.
  const int64_t once = 2 * env.options.quantity;
  out.line = fmt::format(
      "{}an order redelivered, a second alike -> key BookId+Quantity: processed: {}; {}; key "
      "OrderId+BookId: processed: {}; {}",
      TagColumn("business-key"), BoolList(by_content.processed),
      JudgedReserved("Dune", by_content.reserved, once), BoolList(by_order.processed),
      JudgedReserved("Dune", by_order.reserved, once));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  return {// The redelivery and the second order share the first's key: one row, one order.
          {"contentKey", {{"processed", {true, false, false}}, {"inboxRows", 1}, {"reserved", o.quantity}}},
          // Each order its own key: the redelivery alone is skipped.
          {"orderKey", {{"processed", {true, false, true}}, {"inboxRows", 2}, {"reserved", 2 * o.quantity}}},
          {"reserved", o.quantity}};
}

}  // namespace
}  // namespace business_key_file

const Scenario kBusinessKeyScenario{
    .name = "business-key",
    .tag = "business-key",
    .summary = "keyed on what the order asks (book, quantity): a second order alike is dropped",
    .in_post = false,
    .traits = kAnyBackend,
    .run = &business_key_file::Run,
    .expected = &business_key_file::Expected,
    .lesson =
        "A dedup key need not come from the envelope: it can be derived from the business, an "
        "idempotency key. Then it must identify the operation, not only describe it.\n"
        "\n"
        "Here the consumer keys its Inbox row on what the order asks for: the book and the "
        "quantity. The first order's ack is lost and the broker delivers it again: the key is "
        "there, and the redelivery is skipped, as it should be. Then the same customer orders the "
        "same book in the same quantity a second time: a new order with its own OrderId and "
        "MessageId, but the same key. The Inbox insert fails on it and the consumer skips a real "
        "order as a duplicate: its books are never reserved.\n"
        "\n"
        "Keyed on the order and its book, the same deliveries come out right: the redelivery is "
        "skipped and both orders are reserved. A business key works when two different "
        "operations can never share it.",
    .hook_points = "none: the broker's deliveries drive the lesson",
    .try_next =
        "Follow each delivery's key in the trace:\n"
        "  dedupsim run business-key --trace\n"
        "The key from the business done right, with no inbox at all:\n"
        "  dedupsim run natural-key --trace",
};
const LessonRegistration kBusinessKeyLesson{kBusinessKeyScenario,
                                            {.rank = 290, .theme = Theme::kKeys}};

}  // namespace dedupsim
