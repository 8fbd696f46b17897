// retention: Inbox records are kept --retention-days and then cleaned up. On a manual
// clock: redeliveries inside the window are skipped; a replay from the dead-letter queue
// on day 20, after the record was deleted, is processed again.

#include <fmt/format.h>

#include <optional>

#include "world/broker/broker.h"
#include "common.h"
#include "consumers/idempotent.h"
#include "scenarios.h"
#include "store/lesson_tables.h"

namespace dedupsim {
namespace retention_file {
namespace {

constexpr int kReplayDay = 20;  // when the operator replays the dead-letter queue

Outcome Run(ScenarioEnv& env) {
  const auto day = std::chrono::hours(24);
  // Day 0 lies kReplayDay days back, so the replay happens today and no record is stamped
  // in the future.
  const TimePoint start = env.clock.Now() - kReplayDay * day;
  ManualClock clock(start);
  auto day_of = [&] { return static_cast<int>((clock.Now() - start) / day); };

  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  std::unique_ptr<Broker> broker = OpenBroker(env, BrokerOptions{.max_delivery_count = env.options.max_deliveries}, &clock);
  broker->Send(message);

  // Day 0: processed, but the ack never reaches the broker. Day 1: the broker keeps
  // redelivering and the consumer keeps skipping, and still no ack gets through, until the
  // message is dead-lettered.
  int64_t skipped = 0;
  int64_t processed_on_day0 = 0;
  // A mark where the simulated day changes: one moment, one mark.
  std::optional<int> marked_day;
  auto mark_day = [&] {
    if (day_of() == marked_day) return;
    marked_day = day_of();
    env.recorder.MarkTime(fmt::format("day {}", *marked_day));
  };
  mark_day();
  while (std::optional<Delivery> d = broker->Receive()) {
    std::unique_ptr<Store> db = OpenStore(env, "A");
    bool processed = IdempotentReserveStock(*db, clock).Handle(d->message);
    NoteProcessed(*db, processed, ReservedVerdict(env, dune, env.options.quantity));
    (processed ? processed_on_day0 : skipped) += 1;
    broker->LoseAck(*d);
    // The redeliveries come on day 1: the day is marked before the broker hands out the next.
    if (d->delivery_count == 1) {
      clock.Set(start + day);
      mark_day();
    }
  }
  const int64_t dead_lettered = broker->stats().dead_lettered;

  // The nightly cleanup, days 1 to 20.
  std::optional<int> deleted_on_day;
  int64_t deleted = 0;
  for (int night = 1; night <= kReplayDay; ++night) {
    clock.Set(start + night * day);
    mark_day();  // night 1 falls on the day the redeliveries were marked
    std::unique_ptr<Store> db = OpenActorStore(env, "cleanup", "cleanup");
    CleanupResult r = db->tables().DeleteInboxRecordsOlderThan(clock.Now(), env.options.retention);
    if (r.deleted > 0 && !deleted_on_day) deleted_on_day = night;
    deleted += r.deleted;
  }

  // Day 20: the operator replays the dead-letter queue.
  bool replay_processed = false;
  broker->ReplayDeadLetters();
  Drain(*broker, [&](const Delivery& d) {
    std::unique_ptr<Store> db = OpenStore(env, "A");
    replay_processed = IdempotentReserveStock(*db, clock).Handle(d.message);
    NoteProcessed(*db, replay_processed, ReservedVerdict(env, dune, env.options.quantity));
    return Verdict{};
  });
  const int replay_day = day_of();
  StockItem after = CurrentStock(env, dune);

  Outcome out;
  out.figures["retentionDays"] = env.options.retention.count();
  out.figures["maxDeliveries"] = env.options.max_deliveries;
  out.figures["firstDeliveryProcessed"] = processed_on_day0 == 1;
  out.figures["redeliveriesSkipped"] = skipped;
  out.figures["deadLettered"] = dead_lettered;
  out.figures["recordsDeleted"] = deleted;
  out.figures["recordDeletedOnDay"] =
      deleted_on_day ? nlohmann::ordered_json(*deleted_on_day) : nlohmann::ordered_json();
  out.figures["replayDay"] = replay_day;
  out.figures["replayProcessed"] = replay_processed;
  out.figures["reserved"] = after.reserved;
  std::string record = deleted_on_day ? fmt::format("record deleted on day {}", *deleted_on_day)
                                      : fmt::format("record still kept on day {}", replay_day);
  out.line = fmt::format(
      "{}kept {} days: redelivered on day 1 -> skipped: {}, dead-lettered: {}; {}; replayed on day "
      "{} -> processed: {}; {}",
      TagColumn("retention"), env.options.retention.count(), skipped, dead_lettered, record,
      replay_day, CsBool(replay_processed),
      JudgedReserved(after.title, after.reserved, env.options.quantity));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  // The cleanup on night d deletes a record received on day 0 once d > retention.
  const auto retention = static_cast<int>(o.retention.count());
  const bool deleted_in_time = retention + 1 <= kReplayDay;
  return {{"firstDeliveryProcessed", true},
          {"redeliveriesSkipped", o.max_deliveries - 1},
          {"deadLettered", 1},
          {"recordsDeleted", deleted_in_time ? 1 : 0},
          {"recordDeletedOnDay",
           deleted_in_time ? nlohmann::ordered_json(retention + 1) : nlohmann::ordered_json()},
          {"replayDay", kReplayDay},
          {"replayProcessed", deleted_in_time},
          {"reserved", deleted_in_time ? 2 * o.quantity : o.quantity}};
}

}  // namespace
}  // namespace retention_file

const Scenario kRetentionScenario{
    .name = "retention",
    .tag = "retention",
    .summary = "inbox records kept N days: a dead-letter replay after the cleanup is processed again",
    .in_post = false,
    .traits = kHasRetention | kHasMaxDeliveries | kAnyBackend | kRealBroker,
    .run = &retention_file::Run,
    .expected = &retention_file::Expected,
    .lesson =
        "The Inbox cannot grow forever, so a nightly job deletes records older than the retention period (--retention-days, 14 by default; also the dedupsim cleanup command). The question is how short that period may be.\n"
        "\n"
        "The scenario runs on a simulated clock. On day 0 the message is processed, but its ack never reaches the broker. On day 1 the broker redelivers it again and again; every copy finds its Inbox record and is skipped, but no ack gets through, so after the maximum delivery count the message lands in the dead-letter queue. The nightly cleanup deletes the record once it is older than the retention period. On day 20 an operator replays the dead-letter queue. If the record is gone by then, the replay looks brand new and Dune is reserved a second time.\n"
        "\n"
        "The rule: keep records longer than the longest path by which a message can come back, and that path includes a person replaying dead letters days later.",
    .hook_points = "none: the broker, the clock and the nightly cleanup drive the lesson",
    .try_next =
        "Keep records 30 days, past the replay, and it is skipped:\n"
        "  dedupsim run retention --retention-days 30\n"
        "On RabbitMQ the dead letter and its replay are the broker's (the quorum queue's "
        "delivery limit, its dead-letter queue); the days stay simulated:\n"
        "  dedupsim run retention --broker rabbitmq",
    .refuses_broker = [](BrokerKind kind) -> std::string_view {
      if (kind == BrokerKind::kNats)
        return "NATS JetStream keeps no dead letter after MaxDeliver (it stops delivering the "
               "message and emits an advisory), so there is no dead-letter queue for the "
               "operator to replay on day 20";
      return "";
    },
};
const LessonRegistration kRetentionLesson{kRetentionScenario,
                                          {.rank = 170, .theme = Theme::kRetention}};

}  // namespace dedupsim
