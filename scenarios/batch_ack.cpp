// batch-ack: the consumer takes a batch of three deliveries and acks them (one ack each)
// only once it has handled all three; it crashes after handling two. Nothing of the batch
// was acked, so the broker delivers all three again: the inbox skips the two done, the third
// is worked.
#include <fmt/format.h>

#include <vector>

#include "common.h"
#include "consumers/idempotent.h"
#include "lesson/crash.h"
#include "scenarios.h"

namespace dedupsim {
namespace batch_ack_file {

namespace {

constexpr int kBatch = 3;

// Handles d with the post's inbox consumer on a store of its own, traced as A, and notes the
// outcome; true when it did the work.
bool HandleOne(ScenarioEnv& env, const Delivery& d, const Hook& after_commit = {}) {
  std::unique_ptr<Store> store = OpenStore(env, "A", Delivered(d.message, d.delivery_count));
  const bool processed = IdempotentReserveStock(*store, env.clock).Handle(d.message);
  NoteProcessed(*store, processed, ReservedVerdictApart(env, d.message));
  if (after_commit) store->RunHook("AfterSecondCommit", after_commit);
  return processed;
}

// The batch: kBatch deliveries received, one after the other, none acked yet.
std::vector<Delivery> ReceiveBatch(Broker& broker, DeliveryLog& log, const std::string& what) {
  std::vector<Delivery> batch;
  for (int i = 1; i <= kBatch; ++i) {
    batch.push_back(ReceiveNext(broker, fmt::format("{} {} of {}", what, i, kBatch)));
    log.Add(batch.back());
  }
  return batch;
}

Outcome Run(ScenarioEnv& env) {
  const std::vector<StockItem> books = Restock(env, {"Emma", "Hamlet"});
  std::unique_ptr<Broker> broker = OpenBroker(env, {});
  for (const StockItem& book : books) broker->Send(NewOrder(env, book));
  DeliveryLog log;
  const std::vector<Delivery> batch = ReceiveBatch(*broker, log, "the batch's delivery");
  // The first two are handled and committed; the consumer dies before the third, and so
  // before the acks it sends once the whole batch is handled.
  CrashReport crash = RunCrashingDelivery(env, "A", "AfterSecondCommit", [&](const Hook& hook) {
    for (int i = 0; i < kBatch; ++i) HandleOne(env, batch[i], i == 1 ? hook : Hook{});
  });
  const int64_t inbox_after_crash = ProbeRows(env, "Inbox");
  // No ack came for any of them. Released last first: the simulation puts each released
  // delivery at the head of its queue, so the batch comes again in the order it was sent,
  // as a real broker redelivers it.
  for (auto d = batch.rbegin(); d != batch.rend(); ++d) broker->ReleaseUnacked(*d);
  // The redelivered batch, handled whole, then each delivery acked.
  const std::vector<Delivery> again = ReceiveBatch(*broker, log, "the redelivery");
  int processed = 0;
  for (const Delivery& d : again) processed += HandleOne(env, d) ? 1 : 0;
  for (const Delivery& d : again) broker->Ack(d);

  Outcome out;
  std::vector<int64_t> reserved;
  std::string judged;
  for (const StockItem& book : books) {
    const StockItem after = CurrentStock(env, book);
    reserved.push_back(after.reserved);
    judged += (judged.empty() ? "" : ", ") +
              JudgedReserved(after.title, after.reserved, env.options.quantity);
  }
  out.figures["crashed"] = crash.crashed;
  out.figures["crashMode"] = ToString(env.options.crash_mode);
  out.figures["inboxRowsAfterCrash"] = inbox_after_crash;
  out.figures["redeliveries"] = again.size();
  out.figures["redeliveriesSkipped"] = static_cast<int>(again.size()) - processed;
  out.figures["redeliveriesProcessed"] = processed;
  out.figures["inboxRows"] = CurrentRows(env, "Inbox");
  out.figures["reserved"] = reserved;
  out.figures["broker"] = log.Figures(*broker);
  out.line = fmt::format("{}batch of {}, {} -> redelivered: {}, skipped: {}, processed: {}; {}",
                         TagColumn("batch-ack"), kBatch,
                         CrashPhrase(crash.crashed, "crash after 2, before the batch's acks",
                                     "AfterSecondCommit"),
                         again.size(), static_cast<int>(again.size()) - processed, processed,
                         judged);
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  // Two committed before the crash; the whole batch comes again; the inbox turns the two
  // away and works the third: every book reserved once.
  return {{"crashed", true},
          {"inboxRowsAfterCrash", 2},
          {"redeliveries", kBatch},
          {"redeliveriesSkipped", 2},
          {"redeliveriesProcessed", 1},
          {"inboxRows", kBatch},
          {"reserved", {o.quantity, o.quantity, o.quantity}}};
}

}  // namespace
}  // namespace batch_ack_file

const Scenario kBatchAckScenario{
    .name = "batch-ack",
    .tag = "batch-ack",
    .summary = "a batch acked once all of it is handled, a crash after two of three: all three come again, the inbox skips two",
    .in_post = false,
    .traits = kHasCrash | kAnyBackend | kRealBroker,
    .run = &batch_ack_file::Run,
    .expected = &batch_ack_file::Expected,
    .lesson =
        "Consumers often take messages in batches and acknowledge them only once the whole batch is handled (after one flush or one commit for the batch, say). Each ack still comes after its work, so nothing is lost. But until the batch is done, the broker owes the consumer every message in it.\n"
        "\n"
        "Here the consumer takes three orders, for Dune, Emma and Hamlet, and will ack each of them (one ack per message) when all three are handled. It handles the first two with the post's inbox consumer, each committed in its own transaction, and dies before the third (hook AfterSecondCommit). None of the batch's acks was sent, so the broker delivers all three again, the two finished ones with the one that was not.\n"
        "\n"
        "A crash in a batch turns work already done into duplicates, as many as the batch had finished, without any ack being lost on the way. The inbox turns the two away and works the third, so each book is reserved once; a consumer without one would reserve Dune and Emma again (naive shows it for one message). The larger the batch, the more a single crash redelivers: a consumer that acks by the batch must be idempotent for every message in it.",
    .hook_points =
        "AfterSecondCommit: after the second delivery's transaction committed, before the third "
        "delivery is handled and before the batch's acks",
    .try_next =
        "Run the batch's work in a child process killed after two, on a real broker, and read the trace: the broker redelivers the three it never got an ack for:\n"
        "  dedupsim run batch-ack --crash-mode kill --broker rabbitmq --trace",
};
const LessonRegistration kBatchAckLesson{kBatchAckScenario, {.rank = 327, .theme = Theme::kBroker}};

}  // namespace dedupsim
