// shared-key: the post's first experiment. Two consumers of one message share an inbox.
// Keyed on MessageId alone, the first consumer's row silences the second; keyed on
// (MessageId, Consumer), each consumer has its own row and both run.
#include <fmt/format.h>

#include "common.h"
#include "consumers/email.h"
#include "consumers/idempotent.h"
#include "scenarios.h"

namespace dedupsim {
namespace shared_key_file {
namespace {

struct KeyRun {
  bool inventory_processed = false;
  EmailOutcome notification = EmailOutcome::kSent;
  int64_t emails_sent = 0;
  int64_t inbox_rows = 0;
  int64_t reserved = 0;
};

// Inventory, then Notification, handle the same message with inboxes keyed by key.
KeyRun RunWithKey(ScenarioEnv& env, InboxKey key) {
  env.recorder.BeginPart(fmt::format("key {}", ToString(key)));
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  InMemoryEmailProvider provider;
  KeyRun run;
  {
    // Publish/subscribe: each subscriber gets its own copy, each its first delivery.
    std::unique_ptr<Store> store = OpenStore(env, "inventory", Delivered(message, 1));
    IdempotentReserveStock inventory(*store, env.clock);
    inventory.inbox_key = key;
    run.inventory_processed = inventory.Handle(message);
    NoteProcessed(*store, run.inventory_processed,
                  ReservedVerdict(env, dune, env.options.quantity));
  }
  {
    std::unique_ptr<Store> store = OpenStore(env, "notification", Delivered(message, 1));
    SendStockReservedEmail notification(*store, provider, env.clock);
    notification.inbox_key = key;
    run.notification = notification.Handle(message);
    // Its own first copy: right when its email went out once, wrong when it was silenced.
    NoteOutcome(*store, ToString(run.notification),
                provider.sent_count() == 1 ? kVerdictRight : kVerdictWrong);
  }
  run.emails_sent = provider.sent_count();
  run.inbox_rows = CurrentRows(env, InboxTable(key));
  run.reserved = CurrentStock(env, dune).reserved;
  return run;
}

void AddFigures(const char* prefix, const KeyRun& run, nlohmann::ordered_json& figures) {
  figures[fmt::format("{}InventoryProcessed", prefix)] = run.inventory_processed;
  figures[fmt::format("{}Notification", prefix)] = ToString(run.notification);
  figures[fmt::format("{}EmailsSent", prefix)] = run.emails_sent;
  figures[fmt::format("{}InboxRows", prefix)] = run.inbox_rows;
  figures[fmt::format("{}Reserved", prefix)] = run.reserved;
}

std::string Part(InboxKey key, const KeyRun& run) {
  return fmt::format("key {} -> inventory: {}, notification: {}, {}", ToString(key),
                     CsBool(run.inventory_processed), ToString(run.notification),
                     JudgedEmails(run.emails_sent));
}

Outcome Run(ScenarioEnv& env) {
  KeyRun shared = RunWithKey(env, InboxKey::kMessageIdOnly);
  KeyRun own = RunWithKey(env, InboxKey::kMessageIdAndConsumer);
  Outcome out;
  AddFigures("messageIdKey", shared, out.figures);
  AddFigures("perConsumerKey", own, out.figures);
  out.figures["reserved"] = shared.reserved;
  out.line = fmt::format("{}{}; {}", TagColumn("shared-key"), Part(InboxKey::kMessageIdOnly, shared),
                         Part(InboxKey::kMessageIdAndConsumer, own));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  return {// Keyed on MessageId: Inventory's row makes Notification believe it already sent.
          {"messageIdKeyInventoryProcessed", true},
          {"messageIdKeyNotification", "AlreadySent"},
          {"messageIdKeyEmailsSent", 0},
          {"messageIdKeyInboxRows", 1},
          {"messageIdKeyReserved", o.quantity},
          // Keyed on (MessageId, Consumer): one row each, both run.
          {"perConsumerKeyInventoryProcessed", true},
          {"perConsumerKeyNotification", "Sent"},
          {"perConsumerKeyEmailsSent", 1},
          {"perConsumerKeyInboxRows", 2},
          {"perConsumerKeyReserved", o.quantity},
          {"reserved", o.quantity}};
}

}  // namespace
}  // namespace shared_key_file

const Scenario kSharedKeyScenario{
    .name = "shared-key",
    .tag = "shared-key",
    .summary = "inbox keyed on MessageId alone: the notification consumer is silenced as a duplicate",
    .in_post = false,
    .traits = kAnyBackend,
    .run = &shared_key_file::Run,
    .expected = &shared_key_file::Expected,
    .lesson =
        "In publish/subscribe every subscriber receives its own copy of a message, with the same MessageId. Here two consumers share one database and one inbox table: Inventory (inventory.reserve-stock) and Notification (notifications.stock-reserved-email).\n"
        "\n"
        "First the inbox is keyed on MessageId alone. Inventory handles the message and records it. Then Notification looks the message up, finds Inventory's completed row, and concludes it has already sent the email: AlreadySent, with zero emails sent. Nothing failed and nothing was logged; a customer simply never hears from us.\n"
        "\n"
        "Then the same run with the post's key, (MessageId, Consumer): each consumer has its own row, and both do their work. A dedup key has to say who did the work, not only which message it was.",
    .hook_points = "none: both consumers run straight through",
    .try_next =
        "Look at the rows each key leaves behind, and the lookups that find them:\n"
        "  dedupsim run shared-key --trace",
};
const LessonRegistration kSharedKeyLesson{kSharedKeyScenario, {.rank = 100, .theme = Theme::kKeys}};

}  // namespace dedupsim
