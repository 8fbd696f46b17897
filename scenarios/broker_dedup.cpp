// broker-dedup: the broker's send-side duplicate detection drops a producer's resend
// inside its window, and does nothing about a redelivery after a lost ack: the naive
// consumer still reserves twice, the inbox does not.
#include <fmt/format.h>

#include "common.h"
#include "consumers/idempotent.h"
#include "consumers/naive.h"
#include "core/duration.h"
#include "scenarios.h"
#include "world/broker.h"

namespace dedupsim {
namespace broker_dedup_file {
namespace {

// How long the producer waits for the broker's confirmation before it sends again.
constexpr std::chrono::minutes kResendAfter{1};

struct Part {
  int64_t dropped = 0;
  int64_t deliveries = 0;
  int64_t reserved = 0;
};

BrokerOptions Options(const RunOptions& o) {
  return BrokerOptions{.duplicate_detection_window = o.dedup_window};
}

// The naive consumer's delivery, its outcome read from the database: Processed when
// Reserved grew; right while the order is reserved once.
void NoteNaive(ScenarioEnv& env, Store& db, const OrderPlaced& m, const StockItem& book) {
  const int64_t before = CurrentStock(env, book).reserved;
  NaiveReserveStock(db).Handle(m);
  const bool took_effect = CurrentStock(env, book).reserved > before;
  NoteOutcome(db, took_effect ? "Processed" : "changed nothing",
              ReservedVerdict(env, book, m.quantity));
}

// The producer sends, hears nothing for kResendAfter, sends the same message again. The
// naive consumer handles whatever is delivered.
Part ProducerResend(ScenarioEnv& env, ManualClock& clock) {
  env.recorder.BeginPart("producer resend");
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  Broker broker(clock, Options(env.options), &env.recorder);
  broker.Send(message);
  clock.Advance(kResendAfter);
  env.recorder.MarkTime(fmt::format("+{}", FormatDuration(kResendAfter)));
  broker.Send(message);
  Part part;
  part.deliveries = Drain(broker, [&](const Delivery& d) {
    std::unique_ptr<Store> db = OpenStore(env, "A");
    NoteNaive(env, *db, d.message, dune);
    return Verdict{};
  });
  part.dropped = broker.stats().dropped;
  part.reserved = CurrentStock(env, dune).reserved;
  return part;
}

// One send; the first delivery's ack is lost, so the broker delivers it again.
template <typename Handle>
Part LostAck(ScenarioEnv& env, ManualClock& clock, const char* title, Handle handle) {
  env.recorder.BeginPart(title);
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  Broker broker(clock, Options(env.options), &env.recorder);
  broker.Send(message);
  Part part;
  part.deliveries = Drain(broker, [&](const Delivery& d) {
    std::unique_ptr<Store> db = OpenStore(env, "A");
    handle(*db, d.message, dune);
    return Verdict{d.delivery_count == 1 ? Disposition::kAckLost : Disposition::kAck};
  });
  part.dropped = broker.stats().dropped;
  part.reserved = CurrentStock(env, dune).reserved;
  return part;
}

Outcome Run(ScenarioEnv& env) {
  ManualClock clock(env.clock.Now());
  Part resend = ProducerResend(env, clock);
  Part naive = LostAck(env, clock, "ack lost: naive",
                       [&env](Store& db, const OrderPlaced& m, const StockItem& book) {
                         NoteNaive(env, db, m, book);
                       });
  Part inbox = LostAck(env, clock, "ack lost: inbox",
                       [&env, &clock](Store& db, const OrderPlaced& m, const StockItem& book) {
                         NoteProcessed(db, IdempotentReserveStock(db, clock).Handle(m),
                                       ReservedVerdict(env, book, m.quantity));
                       });
  const std::string window = FormatDuration(env.options.dedup_window);
  Outcome out;
  out.figures["window"] = window;
  out.figures["resendAfter"] = FormatDuration(kResendAfter);
  out.figures["resendDropped"] = resend.dropped;
  out.figures["resendDeliveries"] = resend.deliveries;
  out.figures["resendNaiveReserved"] = resend.reserved;
  out.figures["lostAckDropped"] = naive.dropped;
  out.figures["lostAckDeliveries"] = naive.deliveries;
  out.figures["lostAckNaiveReserved"] = naive.reserved;
  out.figures["lostAckInboxReserved"] = inbox.reserved;
  out.figures["reserved"] = naive.reserved;
  out.line = fmt::format(
      "{}window {}: producer resend after {} -> dropped: {}, naive: {}; ack lost, "
      "redelivered -> dropped: {}, naive: {}, inbox: {}",
      TagColumn("broker-dedup"), window, FormatDuration(kResendAfter), resend.dropped,
      JudgedReserved("Dune", resend.reserved, env.options.quantity), naive.dropped,
      JudgedReserved("Dune", naive.reserved, env.options.quantity),
      JudgedReserved("Dune", inbox.reserved, env.options.quantity));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  const bool inside = o.dedup_window > kResendAfter;  // the resend falls inside the window
  return {{"resendDropped", inside ? 1 : 0},
          {"resendDeliveries", inside ? 1 : 2},
          {"resendNaiveReserved", inside ? o.quantity : 2 * o.quantity},
          // A redelivery is not a send: the window never sees it.
          {"lostAckDropped", 0},
          {"lostAckDeliveries", 2},
          {"lostAckNaiveReserved", 2 * o.quantity},
          {"lostAckInboxReserved", o.quantity},
          {"reserved", 2 * o.quantity}};
}

}  // namespace
}  // namespace broker_dedup_file

const Scenario kBrokerDedupScenario{
    .name = "broker-dedup",
    .tag = "broker-dedup",
    .summary = "the broker's duplicate detection drops a producer resend, not a redelivery after a lost ack",
    .in_post = false,
    .traits = kHasDedupWindow | kAnyBackend,
    .run = &broker_dedup_file::Run,
    .expected = &broker_dedup_file::Expected,
    .lesson =
        "Some brokers can drop duplicates themselves: Azure Service Bus remembers the MessageIds it accepted within a window (--dedup-window, here 10 minutes by default, 7 days at most) and discards a send that repeats one. Does that make the idempotent consumer unnecessary?\n"
        "\n"
        "First, the case it is built for: the producer sends, hears nothing back, and sends the same message again a minute later. The resend falls inside the window and is dropped at the door, so even the naive consumer reserves once. Shrink the window below a minute and the resend gets through.\n"
        "\n"
        "Then the case it cannot see: one send, the consumer processes it, and the ack is lost. The broker delivers the same stored message again; that is a redelivery, not a send, and the window never looks at it. The naive consumer reserves twice; only the inbox keeps it at once. Broker features reduce duplicates, and the consumer still has to be idempotent.",
    .hook_points = "none: the broker and the clock drive the lesson",
    .try_next =
        "A window shorter than the producer's resend lets the resend through:\n"
        "  dedupsim run broker-dedup --dedup-window 30s",
};

}  // namespace dedupsim
