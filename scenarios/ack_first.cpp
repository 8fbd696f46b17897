// ack-first: the consumer acks its delivery as it takes it, before the work (as auto-ack
// does), then crashes before its commit. The broker has nothing left to redeliver: the
// order is lost (at-most-once), though the consumer itself is the post's inbox.
#include <fmt/format.h>

#include <optional>

#include "common.h"
#include "consumers/idempotent.h"
#include "lesson/crash.h"
#include "scenarios.h"

namespace dedupsim {
namespace ack_first_file {

namespace {

Outcome Run(ScenarioEnv& env) {
  auto [dune, message, broker, log, first] = SendOneOrder(env, "the delivery");
  // Consumer A takes the delivery (this process holds the broker's connection) and acks it
  // at once: from here on the broker owes this message nothing.
  const DeliveryRef taken = Delivered(first.message, first.delivery_count);
  std::unique_ptr<Store> receiver = OpenStore(env, "A", taken);
  const bool acked = broker->Ack(first);
  // Then the work, where --crash-mode puts it (a child process for kill and exit).
  CrashReport crash = RunCrashingDelivery(env, "A", "BeforeCommit", [&](const Hook& hook) {
    std::unique_ptr<Store> store = OpenQuietStore(env, "A");
    store->SetDelivery(taken);
    IdempotentReserveStock consumer(*store, env.clock);
    consumer.before_commit = hook;
    consumer.Handle(first.message);
  });
  // The delivery's end, seen here once its work ended, on the connection that took and acked
  // it, judged from Reserved read back now: the work died after the ack, and nothing will
  // bring the order back (wrong); had it ended before its crash point, it was processed.
  NoteOutcomeSeenNow(env, *receiver, crash.crashed ? "Crashed, acked" : "Processed",
                     ReservedVerdict(env, dune, env.options.quantity));
  // Whatever the broker still has for the consumer: a delivery it was not acked for comes
  // back, and the inbox consumer handles it as it would any redelivery.
  int redeliveries = 0;
  while (std::optional<Delivery> again = broker->Receive()) {
    log.Add(*again);
    redeliveries++;
    std::unique_ptr<Store> store = OpenStore(env, "A");  // the broker's delivery
    const bool processed = IdempotentReserveStock(*store, env.clock).Handle(again->message);
    NoteProcessed(*store, processed, ReservedVerdict(env, dune, env.options.quantity));
    broker->Ack(*again);
  }
  StockItem after = CurrentStock(env, dune);
  Outcome out;
  out.figures["acked"] = acked;
  out.figures["crashed"] = crash.crashed;
  out.figures["crashMode"] = ToString(env.options.crash_mode);
  out.figures["redeliveries"] = redeliveries;
  out.figures["inboxRows"] = CurrentRows(env, "Inbox");
  out.figures["reserved"] = after.reserved;
  out.figures["broker"] = log.Figures(*broker);
  out.line =
      fmt::format("{}acked, then {} -> redeliveries: {}; {}", TagColumn("ack-first"),
                  CrashPhrase(crash.crashed, "crash before commit", "BeforeCommit"), redeliveries,
                  JudgedReserved(after.title, after.reserved, env.options.quantity));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions&) {
  // The broker took the ack, the crash rolled the work back, nothing came again.
  return {{"acked", true},
          {"crashed", true},
          {"redeliveries", 0},
          {"inboxRows", 0},
          {"reserved", 0}};
}

}  // namespace
}  // namespace ack_first_file

const Scenario kAckFirstScenario{
    .name = "ack-first",
    .tag = "ack-first",
    .summary = "acked before the work, then a crash: nothing is redelivered, the order is lost",
    .in_post = false,
    .traits = kHasCrash | kAnyBackend | kRealBroker,
    .run = &ack_first_file::Run,
    .expected = &ack_first_file::Expected,
    .lesson =
        "At-least-once delivery rests on one promise from the consumer: it acknowledges a message only after the work is done and committed. Until then, the broker keeps the message and hands it out again if the consumer goes away.\n"
        "\n"
        "Here the consumer acknowledges the delivery as soon as it takes it, before the work (what auto-ack does, or an ack sent early \"so the broker does not redeliver while we work\"). The work is the post's inbox consumer, Inbox row and stock update in one transaction; it dies just before COMMIT (hook BeforeCommit), so the database rolls both back, exactly as in crash-before-commit.\n"
        "\n"
        "But this time nothing comes back. The broker was told the message was handled, so it forgot it. The consumer's idempotency never gets a chance to help: there is no second delivery to be idempotent about. The order is handled at most once, and here that means never. Ack after the commit, and let the inbox absorb the duplicates that ordering allows.",
    .hook_points = "BeforeCommit: after the Inbox insert and the stock update, before COMMIT",
    .try_next =
        "Run the work in a child process killed before its commit, on a real broker, and read the trace: the ack left before the child started:\n"
        "  dedupsim run ack-first --crash-mode kill --broker nats --trace",
};
const LessonRegistration kAckFirstLesson{kAckFirstScenario, {.rank = 325, .theme = Theme::kBroker}};

}  // namespace dedupsim
