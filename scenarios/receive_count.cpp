// receive-count: the Inbox row counts every delivery of its key (ReceiveCount), in the same
// transaction that skips the duplicate. Read back, it says "received N times, processed
// once", which the stock confirms.
#include "consumers/receive_count.h"

#include <fmt/format.h>

#include "world/broker/broker.h"
#include "common.h"
#include "scenarios.h"

namespace dedupsim {
namespace receive_count_file {
namespace {

std::string TimesPhrase(int64_t n) {
  if (n == 1) return "once";
  if (n == 2) return "twice";
  return fmt::format("{} times", n);
}

Outcome Run(ScenarioEnv& env) {
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  const int deliveries = env.options.deliveries;
  // Every ack but the last is lost, so the broker delivers the message `deliveries` times.
  std::unique_ptr<Broker> broker = OpenBroker(env, BrokerOptions{.max_delivery_count = deliveries});
  broker->Send(message);
  std::vector<bool> processed;
  DeliveryLog log;
  Drain(*broker, [&](const Delivery& d) {
    log.Add(d);
    std::unique_ptr<Store> store = OpenStore(env, "A");
    processed.push_back(ReceiveCountingReserveStock(*store, env.clock).Handle(d.message).processed);
    return d.delivery_count < deliveries ? Verdict{Disposition::kAckLost}
                                         : Verdict{Disposition::kAck};
  });

  // The figures, read back from the database.
  std::unique_ptr<Store> db = OpenUntraced(env);
  std::optional<InboxRow> row = db->Find(InboxKey::kMessageIdAndConsumer, message.message_id,
                                         ReceiveCountingReserveStock::kName);
  const int64_t receive_count = row ? row->receive_count : 0;
  const bool consumed = row && row->completed_at.has_value();
  const int64_t reserved = db->ReadStock(dune.book_id).reserved;
  const int64_t times_processed = reserved / message.quantity;

  Outcome out;
  out.figures["deliveries"] = broker->stats().deliveries;
  out.figures["processed"] = processed;
  out.figures["receiveCount"] = receive_count;
  out.figures["consumed"] = consumed;
  out.figures["inboxRows"] = CurrentRows(env, "Inbox");
  out.figures["timesProcessed"] = times_processed;
  out.figures["reserved"] = reserved;
  out.figures["broker"] = log.Figures(*broker);
  out.line = fmt::format(
      "{}{} -> processed: {}; Inbox ReceiveCount: {}, consumed: {}; {} (processed {})",
      TagColumn("receive-count"), DeliveredPhrase(static_cast<int>(broker->stats().deliveries)),
      BoolList(processed), receive_count, CsBool(consumed), JudgedReserved(dune.title, reserved, env.options.quantity),
      TimesPhrase(times_processed));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  std::vector<bool> processed(static_cast<size_t>(o.deliveries), false);
  processed.front() = true;
  return {{"deliveries", o.deliveries}, {"processed", processed}, {"receiveCount", o.deliveries},
          {"consumed", true},           {"inboxRows", 1},         {"timesProcessed", 1},
          {"reserved", o.quantity}};
}

}  // namespace
}  // namespace receive_count_file

const Scenario kReceiveCountScenario{
    .name = "receive-count",
    .tag = "receive-count",
    .summary = "the Inbox row counts deliveries: received N times, processed once",
    .in_post = false,
    .traits = kRepeatsDelivery | kAnyBackend | kRealBroker,
    .run = &receive_count_file::Run,
    .expected = &receive_count_file::Expected,
    .lesson =
        "An Inbox row that only says \"seen\" cannot answer an operator's question: was this "
        "message received three times and processed once, or processed three times? The logs of "
        "three deliveries look alike either way.\n"
        "\n"
        "Here the row carries a ReceiveCount, as MassTransit's InboxState does. The first delivery "
        "inserts the row (ReceiveCount 1), reserves, and commits; CompletedAt is the time it was "
        "consumed. The broker then redelivers the message (the acks are lost, --deliveries times "
        "in all). Each duplicate's INSERT fails on the key, and in the same transaction that skips "
        "the work the consumer increments ReceiveCount and stamps LastReceivedAt, then commits.\n"
        "\n"
        "On --broker nats or rabbitmq the broker counts too (num_delivered, x-delivery-count + 1: broker.deliveryCounts in the JSON), and the row's count matches the broker's own. The scenario reads the row back: ReceiveCount equals the broker's deliveries, while the "
        "stock shows the work was done once. The count costs a write per duplicate (a skip is no "
        "longer read-only), which is the price of being able to tell the two stories apart.",
    .hook_points = "none: the broker's redeliveries drive the lesson",
    .try_next =
        "More deliveries raise the count, not the reservation:\n"
        "  dedupsim run receive-count --deliveries 5 --trace",
};
const LessonRegistration kReceiveCountLesson{kReceiveCountScenario,
                                             {.rank = 320, .theme = Theme::kBroker}};

}  // namespace dedupsim
