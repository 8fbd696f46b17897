// check-then-process: look, work, record as three steps; a crash between the work's
// commit and the record lets the redelivery do the work again.
#include <fmt/format.h>

#include "common.h"
#include "consumers/check_then_process.h"
#include "lesson/crash.h"
#include "scenarios.h"

namespace dedupsim {
namespace check_then_process_file {
namespace {

Outcome Run(ScenarioEnv& env) {
  auto [dune, message, broker, log, first] = SendOneOrder(env, "the first delivery");
  CrashReport crash = RunCrashingDelivery(
      env, "A", "AfterStockCommitted",
      [&](const Hook& hook) {
        std::unique_ptr<Store> store =
            OpenStore(env, "A", Delivered(first.message, first.delivery_count));
        CheckThenProcessReserveStock consumer(*store, env.clock);
        consumer.after_stock_committed = hook;
        consumer.Handle(message);
      },
      nullptr,
      [&](Store& store) {
        // On a server: the redelivery's record, which would wait on a key the consumer held.
        store.ClaimCompleted(InboxKey::kMessageIdAndConsumer, message.message_id,
                             CheckThenProcessReserveStock::kName, env.clock.Now());
      });
  broker->ReleaseUnacked(first);  // the consumer died before it acked: the broker redelivers
  int64_t after_crash = CurrentStock(env, dune).reserved;
  bool redelivery_processed;
  {
    const Delivery second = ReceiveNext(*broker, "the redelivery");
    log.Add(second);
    std::unique_ptr<Store> store = OpenStore(env, "A");  // the broker's delivery
    redelivery_processed = CheckThenProcessReserveStock(*store, env.clock).Handle(second.message);
    NoteProcessed(*store, redelivery_processed, ReservedVerdict(env, dune, env.options.quantity));
    broker->Ack(second);
  }
  StockItem after = CurrentStock(env, dune);
  Outcome out;
  out.figures["crashed"] = crash.crashed;
  out.figures["crashMode"] = ToString(env.options.crash_mode);
  out.figures["reservedAfterCrash"] = after_crash;
  out.figures["redeliveryProcessed"] = redelivery_processed;
  out.figures["reserved"] = after.reserved;
  out.figures["broker"] = log.Figures(*broker);
  if (crash.server.measured) out.figures["serverRelease"] = ServerReleaseFigures(crash);
  out.line = fmt::format("{}{} -> {}{}", TagColumn("check-then-process"),
                         CrashPhrase(crash.crashed, "crash after stock commit, redelivered",
                                     "AfterStockCommitted"),
                         JudgedReserved(after.title, after.reserved, env.options.quantity),
                         ServerReleasePhrase(crash));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  // The stock update committed before the crash, so the redelivery reserves again.
  return {{"crashed", true},
          {"reservedAfterCrash", o.quantity},
          {"redeliveryProcessed", true},
          {"reserved", 2 * o.quantity}};
}

}  // namespace
}  // namespace check_then_process_file

const Scenario kCheckThenProcessScenario{
    .name = "check-then-process",
    .tag = "check-then-process",
    .summary = "check, work, record as separate steps; a crash after the stock commit reserves twice",
    .in_post = true,
    .traits = kHasCrash | kAnyBackend | kRealBroker,
    .run = &check_then_process_file::Run,
    .expected = &check_then_process_file::Expected,
    .lesson =
        "The first fix most people write: look in the Inbox, do the work, then write the Inbox row. Each step is its own transaction.\n"
        "\n"
        "That leaves a window between the stock update's commit and the Inbox insert. The scenario crashes the consumer exactly there (hook AfterStockCommitted). The stock is reserved, but no record says so. When the broker redelivers, the check finds nothing and the work runs again: reserved twice, despite the check.\n"
        "\n"
        "Putting the record first does not close the window, it only turns it around: a crash then leaves a record with no work behind it, and the message is lost (see record-first).",
    .hook_points = "AfterStockCommitted: between the stock update's commit and the Inbox insert",
    .try_next =
        "Make the crash a real process death; the outcome is the same:\n"
        "  dedupsim run check-then-process --crash-mode kill --trace",
};
const LessonRegistration kCheckThenProcessLesson{kCheckThenProcessScenario,
                                                 {.rank = 20, .theme = Theme::kPostsSix}};

}  // namespace dedupsim
