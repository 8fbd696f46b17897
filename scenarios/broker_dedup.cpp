// broker-dedup: the broker's send-side duplicate detection drops a producer's resend
// inside its window, and does nothing about a redelivery after a lost ack: the naive
// consumer still reserves twice, the inbox does not.
#include <fmt/format.h>

#include "world/broker/broker.h"
#include "common.h"
#include "consumers/idempotent.h"
#include "consumers/naive.h"
#include "core/duration.h"
#include "scenarios.h"

#include <thread>

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

// The inbox consumer's delivery, judged from the database as the delivery left it: handled
// first, then read (one expression for both would leave their order to the compiler, and
// g++ read Reserved before the work: a first delivery drawn wrong).
void NoteInbox(ScenarioEnv& env, ManualClock& clock, Store& db, const OrderPlaced& m,
               const StockItem& book) {
  const bool processed = IdempotentReserveStock(db, clock).Handle(m);
  NoteProcessed(db, processed, ReservedVerdict(env, book, m.quantity));
}

// The producer sends, hears nothing for kResendAfter, sends the same message again. The
// naive consumer handles whatever is delivered.
Part ProducerResend(ScenarioEnv& env, ManualClock& clock) {
  env.recorder.BeginPart("producer resend");
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  std::unique_ptr<Broker> broker = OpenBroker(env, Options(env.options), &clock);
  broker->Send(message);
  clock.Advance(kResendAfter);
  env.recorder.MarkTime(fmt::format("+{}", FormatDuration(kResendAfter)));
  broker->Send(message);
  Part part;
  part.deliveries = Drain(*broker, [&](const Delivery& d) {
    std::unique_ptr<Store> db = OpenStore(env, "A");
    NoteNaive(env, *db, d.message, dune);
    return Verdict{};
  });
  part.dropped = broker->stats().dropped;
  part.reserved = CurrentStock(env, dune).reserved;
  return part;
}

// One send; the first delivery's ack is lost, so the broker delivers it again.
template <typename Handle>
Part LostAck(ScenarioEnv& env, ManualClock& clock, const char* title, Handle handle) {
  env.recorder.BeginPart(title);
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  std::unique_ptr<Broker> broker = OpenBroker(env, Options(env.options), &clock);
  broker->Send(message);
  Part part;
  part.deliveries = Drain(*broker, [&](const Delivery& d) {
    std::unique_ptr<Store> db = OpenStore(env, "A");
    handle(*db, d.message, dune);
    return Verdict{d.delivery_count == 1 ? Disposition::kAckLost : Disposition::kAck};
  });
  part.dropped = broker->stats().dropped;
  part.reserved = CurrentStock(env, dune).reserved;
  return part;
}

// On a real broker (NATS: the stream's Duplicates window, Nats-Msg-Id) the window is the
// server's and the time is real: the producer resends at once, inside the window, then
// once more after waiting the window out.
Part RealResend(ScenarioEnv& env, const char* title, std::chrono::milliseconds wait) {
  env.recorder.BeginPart(title);
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  std::unique_ptr<Broker> broker = OpenBroker(env, Options(env.options));
  broker->Send(message);
  if (wait.count() > 0) {
    const int64_t before = env.recorder.MicrosSinceOrigin();
    std::this_thread::sleep_for(wait);
    env.recorder.MarkRealWait(fmt::format(
        "the producer waited {} ms", (env.recorder.MicrosSinceOrigin() - before + 500) / 1000));
  }
  broker->Send(message);
  Part part;
  part.deliveries = Drain(*broker, [&](const Delivery& d) {
    std::unique_ptr<Store> db = OpenStore(env, "A");
    NoteNaive(env, *db, d.message, dune);
    return Verdict{};
  });
  part.dropped = broker->stats().dropped;
  part.reserved = CurrentStock(env, dune).reserved;
  return part;
}

Outcome RunOnRealBroker(ScenarioEnv& env) {
  const auto window = env.options.dedup_window;
  const auto after = window + std::chrono::milliseconds(200);
  Part inside = RealResend(env, "resend at once", std::chrono::milliseconds(0));
  Part outside = RealResend(env, "resend after the window", after);
  ManualClock clock(env.clock.Now());
  Part naive = LostAck(env, clock, "ack lost: naive",
                       [&env](Store& db, const OrderPlaced& m, const StockItem& book) {
                         NoteNaive(env, db, m, book);
                       });
  Part inbox = LostAck(env, clock, "ack lost: inbox",
                       [&env, &clock](Store& db, const OrderPlaced& m, const StockItem& book) {
                         NoteInbox(env, clock, db, m, book);
                       });
  const int64_t q = env.options.quantity;
  Outcome out;
  out.figures["window"] = FormatDuration(window);
  out.figures["resendDropped"] = inside.dropped;
  out.figures["resendDeliveries"] = inside.deliveries;
  out.figures["resendNaiveReserved"] = inside.reserved;
  out.figures["lateResendAfterMs"] = after.count();
  out.figures["lateResendDropped"] = outside.dropped;
  out.figures["lateResendDeliveries"] = outside.deliveries;
  out.figures["lateResendNaiveReserved"] = outside.reserved;
  out.figures["lostAckDropped"] = naive.dropped;
  out.figures["lostAckDeliveries"] = naive.deliveries;
  out.figures["lostAckNaiveReserved"] = naive.reserved;
  out.figures["lostAckInboxReserved"] = inbox.reserved;
  out.figures["reserved"] = naive.reserved;
  out.line = fmt::format(
      "{}window {} (Nats-Msg-Id): resend at once -> dropped: {}, naive: {}; resend after {} -> "
      "dropped: {}, naive: {}; ack lost, redelivered -> dropped: {}, naive: {}, inbox: {}",
      TagColumn("broker-dedup"), FormatDuration(window), inside.dropped,
      JudgedReserved("Dune", inside.reserved, q), FormatDuration(after), outside.dropped,
      JudgedReserved("Dune", outside.reserved, q), naive.dropped,
      JudgedReserved("Dune", naive.reserved, q), JudgedReserved("Dune", inbox.reserved, q));
  return out;
}

Outcome Run(ScenarioEnv& env) {
  if (env.options.broker != BrokerKind::kSimulated) return RunOnRealBroker(env);
  ManualClock clock(env.clock.Now());
  Part resend = ProducerResend(env, clock);
  Part naive = LostAck(env, clock, "ack lost: naive",
                       [&env](Store& db, const OrderPlaced& m, const StockItem& book) {
                         NoteNaive(env, db, m, book);
                       });
  Part inbox = LostAck(env, clock, "ack lost: inbox",
                       [&env, &clock](Store& db, const OrderPlaced& m, const StockItem& book) {
                         NoteInbox(env, clock, db, m, book);
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
  if (o.broker != BrokerKind::kSimulated) {
    // The server's window, in real time: the resend at once is inside it, the late one not.
    return {{"resendDropped", 1},
            {"resendDeliveries", 1},
            {"resendNaiveReserved", o.quantity},
            {"lateResendDropped", 0},
            {"lateResendDeliveries", 2},
            {"lateResendNaiveReserved", 2 * o.quantity},
            {"lostAckDropped", 0},
            {"lostAckDeliveries", 2},
            {"lostAckNaiveReserved", 2 * o.quantity},
            {"lostAckInboxReserved", o.quantity},
            {"reserved", 2 * o.quantity}};
  }
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
    .traits = kHasDedupWindow | kAnyBackend | kRealBroker,
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
        "  dedupsim run broker-dedup --dedup-window 30s\n"
        "On NATS JetStream the window is the stream's, in real time (1s unless --dedup-window "
        "says otherwise, at most 30s), with the message id in the Nats-Msg-Id header:\n"
        "  dedupsim run broker-dedup --broker nats --trace",
    .refuses_broker = [](BrokerKind kind) -> std::string_view {
      if (kind == BrokerKind::kRabbitMq)
        return "RabbitMQ has no send-side duplicate detection (3.10.8 as Debian ships it has no "
               "deduplication plugin): every resend is a new message";
      return "";
    },
};
const LessonRegistration kBrokerDedupLesson{kBrokerDedupScenario,
                                            {.rank = 180, .theme = Theme::kRetention}};

}  // namespace dedupsim
