// unreconcilable: a delivery that finds the email's record in progress cannot settle it, and
// acking it silently leaves the case where nobody looks. Parked instead (dead-lettered with
// an alert), an operator settles it with the provider's records: the email went out once,
// and the record is completed.
#include <fmt/format.h>

#include "world/broker/broker.h"
#include "common.h"
#include "consumers/email.h"
#include "consumers/email_reconcile.h"
#include "lesson/crash.h"
#include "scenarios.h"
#include "world/email_provider.h"

namespace dedupsim {
namespace unreconcilable_file {
namespace {

struct Part {
  bool crashed = false;
  std::string redelivery;  // what the redelivery's consumer said
  bool redelivery_right = false;  // its verdict, from the record read back after it
  int64_t dead_lettered = 0;
  std::vector<std::string> alerts;
  std::string settled = "not settled";  // what the operator found, when there was one
  int64_t emails = 0;                   // the provider's SentEmails for this message
  bool completed = false;
};

// The first delivery dies after its send; the redelivery finds the record in progress and
// is acked (park false) or dead-lettered with an alert for an operator (park true).
Part Run(ScenarioEnv& env, const SideStore& store, bool park) {
  env.recorder.BeginPart(park ? "parked for an operator" : "acked as it is");
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  std::unique_ptr<Broker> broker = OpenBroker(env, BrokerOptions{});
  broker->Send(message);
  Part part;
  Drain(*broker, [&](const Delivery& d) -> Verdict {
    if (d.delivery_count == 1) {
      part.crashed = RunCrashingDelivery(env, "A", "AfterSend", [&](const Hook& hook) {
                       std::unique_ptr<Store> db = OpenStore(env, "A");
                       std::unique_ptr<SideRecords> provider_db = OpenProvider(env, store);
                       IdempotentEmailProvider provider(*provider_db, env.clock);
                       SendStockReservedEmail consumer(*db, provider, env.clock);
                       consumer.after_send = hook;
                       consumer.Handle(d.message);
                     }).crashed;
      return Disposition::kUnacked;  // the consumer died: no ack, no nack; redelivered
    }
    std::unique_ptr<Store> db = OpenStore(env, "A");
    std::unique_ptr<SideRecords> provider_db = OpenProvider(env, store);
    IdempotentEmailProvider provider(*provider_db, env.clock);
    EmailOutcome outcome = SendStockReservedEmail(*db, provider, env.clock).Handle(d.message);
    part.redelivery = ToString(outcome);
    const bool dead_letter = outcome == EmailOutcome::kNeedsReconciliation && park;
    // Right when the outcome says what the record, read back now, holds: completed, or in
    // progress and flagged NeedsReconciliation (no second send). Whether the flag reaches
    // anyone is the broker's doing, judged on the line's "dead-lettered".
    auto row = OpenUntraced(env)->Find(InboxKey::kMessageIdAndConsumer, d.message.message_id,
                                       SendStockReservedEmail::kName);
    const bool completed = row && row->completed_at.has_value();
    part.redelivery_right = completed || outcome == EmailOutcome::kNeedsReconciliation;
    NoteOutcome(*db, part.redelivery, part.redelivery_right ? kVerdictRight : kVerdictWrong);
    const bool in_progress = outcome == EmailOutcome::kNeedsReconciliation;
    if (!dead_letter) {
      // Acking a record nobody settled silences it: the ack is wrong, as the line's
      // "dead-lettered: 0" (the outcome before it was right: no second send).
      Verdict ack{Disposition::kAck};
      if (in_progress) ack.judged = kVerdictWrong;
      return ack;
    }
    part.alerts.push_back(
        fmt::format("order {}: the email's record is in progress; it may or may not have been sent",
                    d.message.order_id));
    Verdict parked{Disposition::kDeadLetter, "NeedsReconciliation",
                   "the email's record was found in progress"};
    parked.judged = kVerdictRight;  // where an operator looks, as the line's "dead-lettered: 1"
    return parked;
  });
  part.dead_lettered = broker->stats().dead_lettered;
  // The operator works through the dead-letter queue with the provider's records.
  for (const DeadLetter& letter : broker->dead_letters()) {
    std::unique_ptr<Store> db = OpenActorStore(env, "operator", kActorOperator);
    std::unique_ptr<SideRecords> provider_db = OpenProvider(env, store);
    IdempotentEmailProvider provider(*provider_db, env.clock);
    ReconcileOutcome settled =
        SettleInProgressEmail(*db, provider, env.clock, letter.delivery.message);
    part.settled = settled.provider_knew ? "provider had sent it" : "provider never sent it";
  }
  auto row = OpenUntraced(env)->Find(InboxKey::kMessageIdAndConsumer, message.message_id,
                                     SendStockReservedEmail::kName);
  part.completed = row && row->completed_at.has_value();
  // Read back untraced: the provider's records, not a step of the lesson. The key is
  // SentEmails' primary key: one email at most.
  std::unique_ptr<SideRecords> provider_db = store.Open();
  part.emails = IdempotentEmailProvider(*provider_db, env.clock).Find(message.message_id) ? 1 : 0;
  return part;
}

// "dead-lettered: N", right when the broker moved the message aside (a record nobody can
// settle goes to an operator), wrong when it was acked as it was: silenced.
std::string JudgedDeadLettered(const Part& p) {
  return Judged(fmt::format("dead-lettered: {}", p.dead_lettered), p.dead_lettered == 1);
}

// "record completed: True", right when the Inbox record, read back at the end, is settled.
std::string JudgedCompleted(const Part& p) {
  return Judged(fmt::format("record completed: {}", CsBool(p.completed)), p.completed);
}

nlohmann::ordered_json ToJson(const Part& p) {
  return {{"crashed", p.crashed}, {"redelivery", p.redelivery}, {"deadLettered", p.dead_lettered},
          {"settled", p.settled}, {"emailsSent", p.emails},     {"completed", p.completed}};
}

Outcome RunScenario(ScenarioEnv& env) {
  std::unique_ptr<SideStore> store = env.sides.Create(SideStoreKind::kEmailProvider);
  Part silent = Run(env, *store, false);
  Part parked = Run(env, *store, true);
  Outcome out;
  out.figures["crashMode"] = ToString(env.options.crash_mode);
  out.figures["ackedSilently"] = ToJson(silent);
  out.figures["parked"] = ToJson(parked);
  out.figures["alerts"] = parked.alerts;
  out.figures["emailsSent"] = parked.emails;
  out.line = fmt::format(
      "{}crash after send, redelivered -> acked: {}, {}, {}; parked: {}, operator: {}, {}, {}",
      // The acked half's outcome is not judged on the line: its ✓ (no second send) beside
      // "acked" read as the ack being right (seventeenth walkthrough); what the line judges
      // there is the silencing, "dead-lettered: 0", and the pictures judge the outcome and
      // the ack apart (✓, then ✗).
      TagColumn("unreconcilable"), silent.redelivery,
      JudgedDeadLettered(silent),
      JudgedCompleted(silent), JudgedDeadLettered(parked), parked.settled,
      JudgedEmails(parked.emails), JudgedCompleted(parked));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions&) {
  return {{"ackedSilently",
           {{"crashed", true},
            {"redelivery", "NeedsReconciliation"},
            {"deadLettered", 0},
            {"settled", "not settled"},
            {"emailsSent", 1},
            {"completed", false}}},
          {"parked",
           {{"crashed", true},
            {"redelivery", "NeedsReconciliation"},
            {"deadLettered", 1},
            {"settled", "provider had sent it"},
            {"emailsSent", 1},
            {"completed", true}}},
          {"emailsSent", 1}};
}

}  // namespace
}  // namespace unreconcilable_file

const Scenario kUnreconcilableScenario{
    .name = "unreconcilable",
    .tag = "unreconcilable",
    .summary = "a record found in progress is parked for an operator, not silently acked",
    .in_post = false,
    .traits = kHasCrash | kAnyBackend,
    .run = &unreconcilable_file::RunScenario,
    .expected = &unreconcilable_file::Expected,
    .lesson =
        "The email consumer's first delivery dies after its send (hook AfterSend), leaving the "
        "Inbox record in progress. The redelivery finds it and, rightly, does not send again: it "
        "cannot know whether the email went out, so it reports NeedsReconciliation.\n"
        "\n"
        "What happens next decides whether anyone ever finds out. Acked like a success, the "
        "message is gone: the record stays in progress, nothing is dead-lettered, and if the email "
        "had not gone out, the customer would never get it. Parked instead, the delivery goes to "
        "the dead-letter queue with its reason and raises an alert: a case for a person.\n"
        "\n"
        "The operator settles it with the provider's records, which keep every email sent under "
        "its idempotency key. The provider had sent this one, so the operator completes the record "
        "without sending; had it not, the operator would send with the same key. Either way the "
        "email goes out exactly once and the record is finished. email-reconcile automates the "
        "same settlement in the consumer, for providers that keep such records.",
    .hook_points = "AfterSend: the first delivery dies after the provider accepted the email",
    .try_next =
        "The same with a real process death:\n"
        "  dedupsim run unreconcilable --crash-mode kill --trace\n"
        "Settling in the consumer itself, with an idempotent provider:\n"
        "  dedupsim run email-reconcile",
};
const LessonRegistration kUnreconcilableLesson{kUnreconcilableScenario,
                                               {.rank = 330, .theme = Theme::kOperations}};

}  // namespace dedupsim
