// delivery-tag-key: deduplicating on a value the broker assigns to each delivery (a delivery
// tag, a lock token). A redelivery gets a new tag, so the duplicate is processed. And the
// broker's redelivered flag, lit for that redelivery, stays dark for a producer's resend.
#include <fmt/format.h>

#include "world/broker/broker.h"
#include "common.h"
#include "consumers/keyed.h"
#include "scenarios.h"

namespace dedupsim {
namespace delivery_tag_key_file {
namespace {

struct Part {
  std::vector<bool> processed;
  std::vector<int64_t> tags;
  std::vector<bool> redelivered;
  int64_t reserved = 0;
};

// The message is delivered `deliveries` times (every ack but the last lost), then the
// producer sends it again (a resend: same MessageId, a new message to the broker).
template <typename KeyOf>
Part Deliver(ScenarioEnv& env, const char* title, KeyOf key_of) {
  env.recorder.BeginPart(title);
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  const int deliveries = env.options.deliveries;
  std::unique_ptr<Broker> broker = OpenBroker(env, BrokerOptions{.max_delivery_count = deliveries});
  broker->Send(message);
  Part part;
  auto handle = [&](const Delivery& d) {
    std::unique_ptr<Store> store = OpenStore(env, "A");
    const std::string key = key_of(d);
    store->Note(
        "message",
        fmt::format("delivery tag {}, redelivered {}", d.delivery_tag, CsBool(d.redelivered)),
        "key " + key);
    part.processed.push_back(
        KeyedReserveStock(*store, env.clock).Handle({OrderEventType::kPlaced, d.message}, key));
    // One order however often it comes: right when it took effect once, read back now (the
    // redelivery's new tag lets it reserve again: wrong).
    NoteProcessed(*store, part.processed.back(), ReservedVerdict(env, dune, d.message.quantity));
    part.tags.push_back(d.delivery_tag);
    part.redelivered.push_back(d.redelivered);
  };
  Drain(*broker, [&](const Delivery& d) {
    handle(d);
    return d.delivery_count < deliveries ? Verdict{Disposition::kAckLost}
                                         : Verdict{Disposition::kAck};
  });
  broker->Send(message);  // the producer's resend, after the message was acked
  Drain(*broker, [&](const Delivery& d) {
    handle(d);
    return Verdict{Disposition::kAck};
  });
  part.reserved = CurrentStock(env, dune).reserved;
  return part;
}

nlohmann::ordered_json ToJson(const Part& p) {
  return {{"processed", p.processed},
          {"deliveryTags", p.tags},
          {"redelivered", p.redelivered},
          {"reserved", p.reserved}};
}

Outcome Run(ScenarioEnv& env) {
  Part by_tag = Deliver(env, "key delivery tag",
                       [](const Delivery& d) { return fmt::format("tag-{}", d.delivery_tag); });
  Part by_id =
      Deliver(env, "key MessageId", [](const Delivery& d) { return d.message.message_id; });
  Outcome out;
  out.figures["deliveryTagKey"] = ToJson(by_tag);
  out.figures["messageIdKey"] = ToJson(by_id);
  out.figures["resendRedelivered"] = by_tag.redelivered.back();
  out.figures["reserved"] = by_tag.reserved;
  out.line = fmt::format(
      "{}{}, then resent -> key delivery tag: processed: {}; {}; key MessageId: processed: "
      "{}; {}; redelivered flag: {}",
      TagColumn("delivery-tag-key"), DeliveredPhrase(env.options.deliveries),
      BoolList(by_tag.processed), JudgedReserved("Dune", by_tag.reserved, env.options.quantity),
      BoolList(by_id.processed), JudgedReserved("Dune", by_id.reserved, env.options.quantity),
      BoolList(by_tag.redelivered));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  const size_t n = static_cast<size_t>(o.deliveries);
  std::vector<bool> first_only(n + 1, false);
  first_only.front() = true;
  std::vector<bool> flags(n + 1, true);
  flags.front() = false;
  flags.back() = false;  // the resend is a new message to the broker
  std::vector<int64_t> tags;
  std::vector<bool> by_tag(n + 1, true);
  if (o.broker == BrokerKind::kRabbitMq) {
    // A delivery tag is the channel's: each lost ack closes the channel, and the next
    // delivery, on a new one, is tag 1 again; the resend follows the acked delivery on its
    // channel, tag 2. Keyed on the tag, the redeliveries look like the first: skipped.
    tags.assign(n, 1);
    tags.push_back(2);
    by_tag.assign(n + 1, false);
    by_tag.front() = true;
    by_tag.back() = true;
  } else {
    for (size_t i = 1; i <= n + 1; ++i) tags.push_back(static_cast<int64_t>(i));
  }
  int64_t tag_reserved = 0;
  for (bool p : by_tag) tag_reserved += p ? o.quantity : 0;
  return {{"deliveryTagKey",
           {{"processed", by_tag},
            {"deliveryTags", tags},
            {"redelivered", flags},
            {"reserved", tag_reserved}}},
          {"messageIdKey",
           {{"processed", first_only},
            {"deliveryTags", tags},
            {"redelivered", flags},
            {"reserved", o.quantity}}},
          {"resendRedelivered", false},
          {"reserved", tag_reserved}};
}

}  // namespace
}  // namespace delivery_tag_key_file

const Scenario kDeliveryTagKeyScenario{
    .name = "delivery-tag-key",
    .tag = "delivery-tag-key",
    .summary = "keyed on the broker's delivery tag: every redelivery looks new",
    .in_post = false,
    .traits = kRepeatsDelivery | kAnyBackend | kRealBroker,
    .run = &delivery_tag_key_file::Run,
    .expected = &delivery_tag_key_file::Expected,
    .lesson =
        "Brokers hand a consumer values that look like identifiers: RabbitMQ's delivery tag, Azure "
        "Service Bus's lock token. They identify a delivery, not a message: the broker assigns a "
        "new one every time it hands the message out.\n"
        "\n"
        "The message is delivered --deliveries times (the acks are lost), then the producer sends "
        "it again. Keyed on the delivery tag, the consumer sees a new key every time and reserves "
        "on every delivery. Keyed on the MessageId, which the producer set once, it reserves once "
        "and skips the rest, the resend included.\n"
        "\n"
        "The broker's redelivered flag is no substitute either. It is set on the broker's own "
        "redeliveries, but the producer's resend is a new message to the broker, delivered for the "
        "first time: the flag is False, and a consumer that only checks for duplicates when the "
        "flag is set would process it again.\n"
        "\n"
        "On --broker rabbitmq the tag is worse than new: it is the channel's. Each lost ack here "
        "closes the consumer's channel, the broker redelivers on a new one, and the tag is 1 "
        "again: keyed on it, the redeliveries are skipped as if done, and any other message "
        "that drew tag 1 on some channel would be skipped too. On --broker nats the tag is the "
        "consumer sequence, new on every delivery.",
    .hook_points = "none: the broker's deliveries drive the lesson",
    .try_next =
        "More redeliveries, more reservations under the tag key:\n"
        "  dedupsim run delivery-tag-key --deliveries 4 --trace\n"
        "A key that groups messages instead of identifying them:\n"
        "  dedupsim run correlation-key",
};
const LessonRegistration kDeliveryTagKeyLesson{kDeliveryTagKeyScenario,
                                               {.rank = 270, .theme = Theme::kKeys}};

}  // namespace dedupsim
