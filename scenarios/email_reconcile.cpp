// email-reconcile: the email consumer with a provider that honours an idempotency key. A
// record left in progress by a crash is settled by asking the provider: one email, never
// two, and the record completed.
#include <fmt/format.h>

#include "common.h"
#include "consumers/email_reconcile.h"
#include "lesson/crash.h"
#include "scenarios.h"
#include "world/email_provider.h"

namespace dedupsim {
namespace email_reconcile_file {
namespace {

struct Part {
  bool crashed = false;
  ReconcileOutcome second;
  int64_t emails_sent = 0;        // by the provider, for this message
  int64_t provider_requests = 0;  // sends asked of the provider
  bool completed = false;         // the Inbox record is completed at the end
  int64_t reserved = 0;           // Dune's Reserved: no consumer here touches stock
};

// A delivery that crashes at `point`, then the redelivery, with the provider in store.
Part CrashThenRedeliver(ScenarioEnv& env, const SideStore& store, const char* point) {
  env.recorder.BeginPart(std::string_view(point) == "AfterSend" ? "crash after send"
                                                                : "crash before send");
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  int64_t sent_before, requests_before;
  {
    std::unique_ptr<SideRecords> records = store.Open();
    IdempotentEmailProvider provider(*records, env.clock);
    sent_before = provider.SentCount();
    requests_before = provider.RequestCount();
  }
  Part part;
  part.crashed = RunCrashingDelivery(env, "A", point, [&](const Hook& hook) {
                   std::unique_ptr<Store> db = OpenStore(env, "A", Delivered(message, 1));
                   std::unique_ptr<SideRecords> provider_records = OpenProvider(env, store);
                   IdempotentEmailProvider provider(*provider_records, env.clock);
                   ReconcilingEmailSender consumer(*db, provider, env.clock);
                   (std::string_view(point) == "BeforeSend" ? consumer.before_send
                                                            : consumer.after_send) = hook;
                   consumer.Handle(message);
                 }).crashed;
  std::unique_ptr<Store> db = OpenStore(env, "A", Delivered(message, 2));
  std::unique_ptr<SideRecords> provider_records = OpenProvider(env, store);
  IdempotentEmailProvider provider(*provider_records, env.clock);
  part.second = ReconcilingEmailSender(*db, provider, env.clock).Handle(message);
  {
    // The scenario's own count of what the provider did, on a connection of its own.
    std::unique_ptr<SideRecords> records = store.Open();
    IdempotentEmailProvider counted(*records, env.clock);
    part.emails_sent = counted.SentCount() - sent_before;
    part.provider_requests = counted.RequestCount() - requests_before;
  }
  // Right when the provider sent the email once, whatever the record said.
  NoteOutcome(*db, ToString(part.second.outcome),
              part.emails_sent == 1 ? kVerdictRight : kVerdictWrong);
  std::unique_ptr<Store> probe = OpenProbeStore(env);
  auto row = probe->Find(InboxKey::kMessageIdAndConsumer, message.message_id,
                         ReconcilingEmailSender::kName);
  part.completed = row && row->completed_at.has_value();
  part.reserved = probe->ReadStock(dune.book_id).reserved;
  return part;
}

void AddFigures(const char* prefix, const Part& p, nlohmann::ordered_json& figures) {
  figures[fmt::format("{}Crashed", prefix)] = p.crashed;
  figures[fmt::format("{}EmailsSent", prefix)] = p.emails_sent;
  figures[fmt::format("{}ProviderRequests", prefix)] = p.provider_requests;
  figures[fmt::format("{}SecondDelivery", prefix)] = ToString(p.second.outcome);
  figures[fmt::format("{}Reconciled", prefix)] = p.second.reconciled;
  figures[fmt::format("{}ProviderKnew", prefix)] = p.second.provider_knew;
  figures[fmt::format("{}RecordCompleted", prefix)] = p.completed;
}

Outcome Run(ScenarioEnv& env) {
  std::unique_ptr<SideStore> store = env.sides.Create(SideStoreKind::kEmailProvider);
  Part after_send = CrashThenRedeliver(env, *store, "AfterSend");
  Part before_send = CrashThenRedeliver(env, *store, "BeforeSend");
  Outcome out;
  out.figures["crashMode"] = ToString(env.options.crash_mode);
  AddFigures("afterSend", after_send, out.figures);
  AddFigures("beforeSend", before_send, out.figures);
  out.figures["emailsSent"] = after_send.emails_sent;
  out.figures["secondDelivery"] = ToString(after_send.second.outcome);
  out.figures["reserved"] = before_send.reserved;
  out.line = fmt::format(
      "{}{}, redelivered -> {}, second delivery: {}; {}, redelivered -> {}, second delivery: {}",
      TagColumn("email-reconcile"),
      CrashPhrase(after_send.crashed, "crash after send", "AfterSend"),
      // Each second delivery's outcome as its card judges it.
      JudgedEmails(after_send.emails_sent),
      Judged(ToString(after_send.second.outcome), after_send.emails_sent == 1),
      CrashPhrase(before_send.crashed, "crash before send", "BeforeSend"),
      JudgedEmails(before_send.emails_sent),
      Judged(ToString(before_send.second.outcome), before_send.emails_sent == 1));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions&) {
  return {// The provider has the key: nothing is sent again, the record is completed.
          {"afterSendCrashed", true},
          {"afterSendEmailsSent", 1},
          {"afterSendProviderRequests", 1},
          {"afterSendSecondDelivery", "AlreadySent"},
          {"afterSendReconciled", true},
          {"afterSendProviderKnew", true},
          {"afterSendRecordCompleted", true},
          // The provider never got it: the reconciliation sends it, once.
          {"beforeSendCrashed", true},
          {"beforeSendEmailsSent", 1},
          {"beforeSendProviderRequests", 1},
          {"beforeSendSecondDelivery", "Sent"},
          {"beforeSendReconciled", true},
          {"beforeSendProviderKnew", false},
          {"beforeSendRecordCompleted", true},
          {"emailsSent", 1},
          {"secondDelivery", "AlreadySent"}};
}

}  // namespace
}  // namespace email_reconcile_file

const Scenario kEmailReconcileScenario{
    .name = "email-reconcile",
    .tag = "email-reconcile",
    .summary = "the provider honours an idempotency key: a half-done email record is settled, sent once",
    .in_post = false,
    .traits = kHasCrash | kAnyBackend,
    .run = &email_reconcile_file::Run,
    .expected = &email_reconcile_file::Expected,
    .lesson =
        "The email scenario stops at NeedsReconciliation: the record is in progress and the consumer cannot know whether the email left. This scenario finishes the job with the help of the provider.\n"
        "\n"
        "The provider (a second SQLite file next to the database, so its records outlive a crashed process) accepts the message id as an idempotency key: it never sends twice under one key, and it answers whether a key was sent. When the redelivery finds the record in progress, the consumer asks. After a crash at AfterSend the provider has the key: the outcome is AlreadySent and the record is completed without a second email. After a crash at BeforeSend the provider has never seen the key: the consumer sends now, with the same key, and the outcome is Sent. Either way exactly one email went out and no record is left half-done.\n"
        "\n"
        "Passing the key on to the next system is what lets each tier dedup its own work.",
    .hook_points =
        "BeforeSend: the in-progress record is committed, nothing sent; AfterSend: the provider accepted the email, the record is not completed",
    .try_next =
        "Crash a real child process; the provider's record survives it:\n"
        "  dedupsim run email-reconcile --crash-mode kill --trace",
};
const LessonRegistration kEmailReconcileLesson{kEmailReconcileScenario,
                                               {.rank = 190, .theme = Theme::kSideEffects}};

}  // namespace dedupsim
