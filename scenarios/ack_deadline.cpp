// ack-deadline: a consumer slower than the broker's ack deadline (NATS AckWait) gets its
// message redelivered to another consumer while it still works: a duplicate the broker makes
// by itself, with no crash and no lost ack. The naive consumer reserves twice; the inbox
// settles it by its key; and the first consumer's late ack is accepted.
#include <fmt/format.h>

#include <string_view>
#include <vector>

#include "common.h"
#include "consumers/idempotent.h"
#include "consumers/naive.h"
#include "core/duration.h"
#include "scenarios.h"

namespace dedupsim {
namespace ack_deadline_file {
namespace {

constexpr std::chrono::milliseconds kAckWait{200};

struct Part {
  std::vector<bool> processed;  // A's, then B's
  bool a_ack = false;           // the broker took A's late ack
  bool b_ack = false;
  int64_t reserved = 0;
  nlohmann::ordered_json broker;  // what the broker said about the two deliveries
};

// The broker's ack deadline passes while A still works: on a real broker by itself (Receive
// waits for the redelivery), on the simulation by its clock.
Delivery RedeliveryWhileAWorks(ScenarioEnv& env, Broker& broker, ManualClock& clock) {
  if (broker.kind() == BrokerKind::kSimulated) {
    clock.Advance(kAckWait + std::chrono::milliseconds(1));
    env.recorder.MarkTime(fmt::format("+{}", FormatDuration(kAckWait + std::chrono::milliseconds(1))));
  }
  return ReceiveNext(broker, "the redelivery once A's ack deadline passed");
}

template <typename Work>
Part Deliver(ScenarioEnv& env, const char* title, Work work) {
  DeliveryLog log;
  env.recorder.BeginPart(title);
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  ManualClock clock(env.clock.Now());
  std::unique_ptr<Broker> broker =
      OpenBroker(env, {.ack_wait = kAckWait, .expire_unacked = true}, &clock);
  broker->Send(message);
  const Delivery a = ReceiveNext(*broker, "A's delivery");
  log.Add(a);
  Part part;
  Delivery b;
  // A's work; the hook runs while A still works on it (its transaction open, for the inbox).
  part.processed.push_back(work(a, "A", [&] {
    b = RedeliveryWhileAWorks(env, *broker, clock);
    log.Add(b);
  }));
  part.a_ack = broker->Ack(a);  // late: after the deadline, after the redelivery
  part.processed.push_back(work(b, "B", [] {}));
  part.b_ack = broker->Ack(b);
  part.reserved = CurrentStock(env, dune).reserved;
  part.broker = log.Figures(*broker);
  return part;
}

Outcome Run(ScenarioEnv& env) {
  Part naive = Deliver(env, "naive",
                       [&](const Delivery& d, const char* who, const std::function<void()>& slow) {
                         std::unique_ptr<Store> db = OpenStore(env, who, Delivered(d.message, d.delivery_count));
                         NaiveReserveStock(*db).Handle(d.message);
                         slow();  // still working (a slow call after the update)
                         // A's handler returns once its slow call is done, past the deadline:
                         // its step, so its outcome (stamped at its last step) comes after the
                         // broker gave up on it (twelfth walkthrough: A read as finished before).
                         if (std::string_view(who) == "A") {
                           db->Note("slow call", "after its update", "returned");
                         }
                         // Right while the order took effect once, read back now: B's
                         // second reservation is wrong.
                         NoteOutcome(*db, "Processed", ReservedVerdictApart(env, d.message));
                         return true;
                       });
  Part inbox = Deliver(env, "inbox",
                       [&](const Delivery& d, const char* who, const std::function<void()>& slow) {
                         std::unique_ptr<Store> db = OpenStore(env, who, Delivered(d.message, d.delivery_count));
                         IdempotentReserveStock consumer(*db, env.clock);
                         consumer.before_commit = slow;  // its key claimed, not committed yet
                         const bool processed = consumer.Handle(d.message);
                         NoteProcessed(*db, processed, ReservedVerdictApart(env, d.message));
                         return processed;
                       });
  const int64_t q = env.options.quantity;
  Outcome out;
  out.figures["ackWaitMs"] = kAckWait.count();
  out.figures["naiveProcessed"] = naive.processed;
  out.figures["naiveReserved"] = naive.reserved;
  out.figures["inboxProcessed"] = inbox.processed;
  out.figures["inboxReserved"] = inbox.reserved;
  out.figures["lateAckAccepted"] = inbox.a_ack;
  out.figures["secondAckAccepted"] = inbox.b_ack;
  out.figures["naiveBroker"] = naive.broker;
  out.figures["inboxBroker"] = inbox.broker;
  out.figures["reserved"] = inbox.reserved;
  out.line = fmt::format(
      "{}AckWait {}, A still working -> redelivered to B; naive: {}; inbox: processed: {}; {}; "
      "A's late ack accepted: {}",
      TagColumn("ack-deadline"), FormatDuration(kAckWait), JudgedReserved("Dune", naive.reserved, q),
      BoolList(inbox.processed), JudgedReserved("Dune", inbox.reserved, q), CsBool(inbox.a_ack));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  return {{"naiveProcessed", {true, true}},
          {"naiveReserved", 2 * o.quantity},
          {"inboxProcessed", {true, false}},
          {"inboxReserved", o.quantity},
          {"lateAckAccepted", true},
          {"reserved", o.quantity}};
}

}  // namespace
}  // namespace ack_deadline_file

const Scenario kAckDeadlineScenario{
    .name = "ack-deadline",
    .tag = "ack-deadline",
    .summary = "a consumer slower than the ack deadline: the broker redelivers to another while it works",
    .in_post = false,
    .traits = kAnyBackend | kRealBroker,
    .run = &ack_deadline_file::Run,
    .expected = &ack_deadline_file::Expected,
    .lesson =
        "Nothing crashes and no ack is lost here. Consumer A takes the message and is simply slow: "
        "it is still working when the broker's ack deadline (NATS JetStream's AckWait, 200 ms "
        "here) passes. The broker does not know whether A is alive; it hands the same message to "
        "consumer B. Two consumers now work on one message at once, a duplicate the broker made "
        "by itself.\n"
        "\n"
        "The naive consumer reserves on both: four books for a two-book order. The inbox "
        "consumer claims the key first: A holds its claim while B's delivery arrives; A commits, "
        "and B's claim then fails on the key and it skips the work.\n"
        "\n"
        "Then A acks, late, after the deadline and after the redelivery, and the broker accepts "
        "the ack (NATS 2.9.10 answers it OK and counts the message done while B still holds it: "
        "nats-server issue 4786). A late ack is no proof that nobody else got the message.",
    .hook_points = "BeforeCommit: A, its key claimed, waits there past the broker's AckWait",
    .try_next =
        "On a real broker, the deadline and the redelivery are the server's:\n"
        "  dedupsim run ack-deadline --broker nats --trace",
    .refuses_broker = [](BrokerKind kind) -> std::string_view {
      if (kind == BrokerKind::kRabbitMq)
        return "RabbitMQ 3.10 checks consumer_timeout once a minute (measured: a 2 s timeout closed "
               "the channel after 59.8 s) and then closes the consumer's whole channel (406 "
               "PRECONDITION_FAILED), so the deadline passes a minute late and A's late ack cannot "
               "be sent at all (docs/brokers.md)";
      return "";
    },
};
const LessonRegistration kAckDeadlineLesson{kAckDeadlineScenario,
                                            {.rank = 280, .theme = Theme::kBroker}};

}  // namespace dedupsim
