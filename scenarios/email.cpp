// email: a side effect outside the transaction, with a two-phase record. A crash after
// the send leaves the row in progress; the redelivery reports NeedsReconciliation.
#include <fmt/format.h>

#include "common.h"
#include "consumers/email.h"
#include "lesson/crash.h"
#include "scenarios.h"

namespace dedupsim {
namespace email_file {
namespace {

Outcome Run(ScenarioEnv& env) {
  auto [dune, message, broker, log, first] = SendOneOrder(env, "the first delivery");
  InMemoryEmailProvider provider;
  CrashReport crash = RunCrashingDelivery(
      env, "A", "AfterSend",
      [&](const Hook& hook) {
        std::unique_ptr<Store> store =
            OpenStore(env, "A", Delivered(first.message, first.delivery_count));
        SendStockReservedEmail consumer(*store, provider, env.clock);
        consumer.after_send = hook;
        consumer.Handle(message);
      },
      &provider,
      [&](Store& store) {
        // On a server: the redelivery's phase-1 record, on the key the consumer claimed.
        store.ClaimInProgress(InboxKey::kMessageIdAndConsumer, message.message_id,
                              SendStockReservedEmail::kName, env.clock.Now());
      });
  broker->ReleaseUnacked(first);  // the consumer died before it acked: the broker redelivers
  EmailOutcome redelivered;
  {
    const Delivery second = ReceiveNext(*broker, "the redelivery");
    log.Add(second);
    std::unique_ptr<Store> store = OpenStore(env, "A");  // the broker's delivery
    redelivered = SendStockReservedEmail(*store, provider, env.clock).Handle(second.message);
    // Right when the order's email went out once (and none is resent): read from the provider.
    NoteOutcome(*store, ToString(redelivered),
                provider.sent_count() == 1 ? kVerdictRight : kVerdictWrong);
    broker->Ack(second);  // NeedsReconciliation is settled by a person, not by redelivering
  }
  Outcome out;
  out.figures["crashed"] = crash.crashed;
  out.figures["crashMode"] = ToString(env.options.crash_mode);
  out.figures["emailsSent"] = provider.sent_count();
  out.figures["secondDelivery"] = ToString(redelivered);
  out.figures["reserved"] = CurrentStock(env, dune).reserved;
  out.figures["broker"] = log.Figures(*broker);
  if (crash.server.measured) out.figures["serverRelease"] = ServerReleaseFigures(crash);
  out.line = fmt::format("{}{} -> {}, second delivery: {}{}", TagColumn("email"),
                         CrashPhrase(crash.crashed, "crash after send, redelivered", "AfterSend"),
                         JudgedEmails(provider.sent_count()),
                         // The second delivery's outcome as its card judges it.
                         Judged(ToString(redelivered), provider.sent_count() == 1),
                         ServerReleasePhrase(crash));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions&) {
  return {{"crashed", true}, {"emailsSent", 1}, {"secondDelivery", "NeedsReconciliation"}};
}

}  // namespace
}  // namespace email_file

const Scenario kEmailScenario{
    .name = "email",
    .tag = "email",
    .summary = "two-phase record around an email: a crash after send is flagged, not resent",
    .in_post = true,
    .traits = kHasCrash | kAnyBackend | kRealBroker,
    .run = &email_file::Run,
    .expected = &email_file::Expected,
    .lesson =
        "An email cannot be rolled back with a database transaction. So the consumer keeps a two-phase record: it commits an \"in progress\" Inbox row (CompletedAt NULL), sends, and then marks the row completed.\n"
        "\n"
        "The scenario crashes after the send (hook AfterSend). The redelivery finds the row still in progress. It cannot tell whether the email went out, did not, or is being sent by another instance right now, so it neither sends again nor pretends all is well: it reports NeedsReconciliation. One email went out, and the case is flagged for a person or for the provider's own idempotency support to settle.",
    .hook_points = "AfterSend: after the provider accepted the email, before CompletedAt is written",
    .try_next =
        "Crash as a real process: the email the child sent still counts, and the outcome holds:\n"
        "  dedupsim run email --crash-mode exit --trace",
};
const LessonRegistration kEmailLesson{kEmailScenario, {.rank = 60, .theme = Theme::kPostsSix}};

}  // namespace dedupsim
