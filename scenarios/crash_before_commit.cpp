// crash-before-commit: the inbox consumer dies at BeforeCommit; both the Inbox row and the
// stock update roll back, and the redelivery starts from a clean slate.
#include <fmt/format.h>

#include "common.h"
#include "consumers/idempotent.h"
#include "lesson/crash.h"
#include "scenarios.h"

namespace dedupsim {
namespace crash_before_commit_file {
namespace {

Outcome Run(ScenarioEnv& env) {
  auto [dune, message, broker, log, first] = SendOneOrder(env, "the first delivery");
  CrashReport crash = RunCrashingDelivery(
      env, "A", "BeforeCommit",
      [&](const Hook& hook) {
        std::unique_ptr<Store> store =
            OpenStore(env, "A", Delivered(first.message, first.delivery_count));
        IdempotentReserveStock consumer(*store, env.clock);
        consumer.before_commit = hook;
        consumer.Handle(message);
      },
      nullptr,
      [&](Store& store) {
        // On a server: the redelivery's claim, waiting on the key the dying consumer holds.
        store.ClaimCompleted(InboxKey::kMessageIdAndConsumer, message.message_id,
                             IdempotentReserveStock::kName, env.clock.Now());
      });
  broker->ReleaseUnacked(first);  // the consumer died before it acked: the broker redelivers
  int64_t after_crash = CurrentStock(env, dune).reserved;
  int64_t inbox_after_crash = ProbeRows(env, "Inbox");
  bool redelivery_processed;
  {
    const Delivery second = ReceiveNext(*broker, "the redelivery");
    log.Add(second);
    std::unique_ptr<Store> store = OpenStore(env, "A");  // the broker's delivery
    redelivery_processed = IdempotentReserveStock(*store, env.clock).Handle(second.message);
    NoteProcessed(*store, redelivery_processed, ReservedVerdict(env, dune, env.options.quantity));
    broker->Ack(second);
  }
  StockItem after = CurrentStock(env, dune);
  Outcome out;
  out.figures["crashed"] = crash.crashed;
  out.figures["crashMode"] = ToString(env.options.crash_mode);
  out.figures["reservedAfterCrash"] = after_crash;
  out.figures["inboxRowsAfterCrash"] = inbox_after_crash;
  out.figures["redeliveryProcessed"] = redelivery_processed;
  out.figures["reserved"] = after.reserved;
  out.figures["broker"] = log.Figures(*broker);
  if (crash.server.measured) out.figures["serverRelease"] = ServerReleaseFigures(crash);
  out.line =
      fmt::format("{}{} -> reserved {}; redelivered -> {}{}", TagColumn("inbox"),
                  CrashPhrase(crash.crashed, "crash before commit", "BeforeCommit"), after_crash, JudgedReserved(after.title, after.reserved, env.options.quantity),
                  ServerReleasePhrase(crash));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  // Nothing of the crashed transaction survives; the redelivery does the work once.
  return {{"crashed", true},
          {"reservedAfterCrash", 0},
          {"inboxRowsAfterCrash", 0},
          {"redeliveryProcessed", true},
          {"reserved", o.quantity}};
}

}  // namespace
}  // namespace crash_before_commit_file

const Scenario kCrashBeforeCommitScenario{
    .name = "crash-before-commit",
    .tag = "inbox",
    .summary = "the inbox consumer crashes before commit: row and stock roll back, redelivery works once",
    .in_post = true,
    .traits = kHasCrash | kAnyBackend | kRealBroker,
    .run = &crash_before_commit_file::Run,
    .expected = &crash_before_commit_file::Expected,
    .lesson =
        "The inbox consumer has claimed the key and reserved the stock, and then dies just before COMMIT (hook BeforeCommit).\n"
        "\n"
        "Because the Inbox row and the stock update were in the same transaction, neither survives: the database shows zero reserved and no Inbox row. There is no moment in which one is saved without the other. The redelivered message therefore finds a clean slate, claims the key, and reserves once.\n"
        "\n"
        "With --crash-mode kill the consumer is a real child process that is sent SIGKILL while its transaction is open; SQLite's own recovery (the journal or the WAL) gives the same result on the next open.",
    .hook_points = "BeforeCommit: after the Inbox insert and the stock update, before COMMIT",
    .try_next =
        "Kill a real process mid-transaction, in rollback-journal mode, and read the recovery in the trace:\n"
        "  dedupsim run crash-before-commit --crash-mode kill --journal delete --trace",
};
const LessonRegistration kCrashBeforeCommitLesson{kCrashBeforeCommitScenario,
                                                  {.rank = 40, .theme = Theme::kPostsSix}};

}  // namespace dedupsim
