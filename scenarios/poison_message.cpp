// poison-message: a message whose handling always fails. The broker redelivers it up to
// its max delivery count, then dead-letters it; every attempt rolled back, so the Inbox
// never records the key and the stock is untouched.
#include <fmt/format.h>

#include <stdexcept>

#include "world/broker/broker.h"
#include "common.h"
#include "consumers/idempotent.h"
#include "scenarios.h"
#include "store/lesson_tables.h"

namespace dedupsim {
namespace poison_message_file {
namespace {

// The handler's own check: its stock update must have found the book.
class UnknownBook : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

Outcome Run(ScenarioEnv& env) {
  StockItem dune = Restock(env);
  // The poison: an order line for a book the inventory does not stock (a fresh id).
  const std::string missing_book = env.ids.Next();
  OrderPlaced poison{env.ids.Next(), env.ids.Next(), missing_book, env.options.quantity};

  std::unique_ptr<Broker> broker = OpenBroker(env, BrokerOptions{.max_delivery_count = env.options.max_deliveries});
  // A message that can never be handled belongs where an operator looks: its dead letter is
  // right in every view, as on the line.
  broker->JudgeDeadLetters(kVerdictRight);
  broker->Send(poison);
  int64_t attempts = 0;  // deliveries whose handler ran into the failure
  int64_t processed = 0;
  DeliveryLog log;
  Drain(*broker, [&](const Delivery& d) {
    log.Add(d);
    std::unique_ptr<Store> store = OpenStore(env, "A");
    Store& db = *store;
    IdempotentReserveStock consumer(db, env.clock);
    consumer.before_commit = [&db, &d] {
      // The UPDATE of a book that is not there changes no row: the work cannot be done.
      if (db.tables().LastChanges() == 0)
        throw UnknownBook("no stock row for book " + d.message.book_id);
    };
    try {
      if (consumer.Handle(d.message)) processed++;
      return Verdict{Disposition::kAck};
    } catch (const UnknownBook& e) {
      attempts++;
      db.Note("fail", e.what(), db.InTransaction() ? "open" : "rolled back");
      return Verdict{Disposition::kAbandon};
    }
  });
  const BrokerStats& stats = broker->stats();
  const std::string reason =
      broker->dead_letters().empty() ? "none" : broker->dead_letters().front().reason;
  const int64_t inbox_rows = CurrentRows(env, "Inbox");
  const int64_t reserved = CurrentStock(env, dune).reserved;

  Outcome out;
  out.figures["maxDeliveries"] = env.options.max_deliveries;
  out.figures["deliveries"] = stats.deliveries;
  out.figures["handlerAttempts"] = attempts;
  out.figures["processed"] = processed;
  out.figures["deadLettered"] = stats.dead_lettered;
  out.figures["deadLetterReason"] = reason;
  out.figures["gaveUp"] = stats.gave_up;
  out.figures["inboxRows"] = inbox_rows;
  out.figures["reserved"] = reserved;
  out.figures["broker"] = log.Figures(*broker);
  // NATS keeps no dead letter: it stops delivering, and says so only in an advisory.
  const std::string gave_up =
      stats.gave_up > 0
          ? fmt::format(" ({} stopped delivering it after MaxDeliver {}, said only in an advisory)",
                        broker->server(), env.options.max_deliveries)
          : "";
  // A poison belongs in the dead-letter queue, where an operator looks: right when the
  // broker put it there; wrong when it gave up without one (silenced, NATS). The stock no
  // order was for is right untouched (once = 0).
  out.line =
      fmt::format("{}handler fails on every delivery -> deliveries: {}, {}{}; inbox rows: {}; {}",
                  TagColumn("poison-message"), attempts,
                  Judged(fmt::format("dead-lettered: {} ({})", stats.dead_lettered, reason),
                         stats.dead_lettered > 0 && stats.gave_up == 0),
                  gave_up, inbox_rows, JudgedReserved(dune.title, reserved, 0));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  // The simulation dead-letters (MaxDeliveryCountExceeded), as Service Bus does; RabbitMQ's
  // quorum queue too, past x-delivery-limit (delivery_limit); NATS gives up without one.
  const bool nats = o.broker == BrokerKind::kNats;
  return {{"deliveries", o.max_deliveries},
          {"handlerAttempts", o.max_deliveries},
          {"processed", 0},
          {"deadLettered", nats ? 0 : 1},
          {"deadLetterReason", nats                                 ? "none"
                               : o.broker == BrokerKind::kRabbitMq ? "delivery_limit"
                                                                    : "MaxDeliveryCountExceeded"},
          {"gaveUp", nats ? 1 : 0},
          {"inboxRows", 0},
          {"reserved", 0}};
}

}  // namespace
}  // namespace poison_message_file

const Scenario kPoisonMessageScenario{
    .name = "poison-message",
    .tag = "poison-message",
    .summary =
        "a message that always fails: redelivered to the limit, dead-lettered, nothing recorded",
    .in_post = false,
    .traits = kHasMaxDeliveries | kAnyBackend | kRealBroker,
    .run = &poison_message_file::Run,
    .expected = &poison_message_file::Expected,
    .lesson =
        "Some messages can never be handled: here an order line names a book the inventory does "
        "not stock. The inbox consumer claims the key and runs its stock update, which finds no "
        "row; the handler checks that and throws before commit.\n"
        "\n"
        "The throw rolls the transaction back, Inbox row included, so nothing remembers the "
        "attempt, and the broker treats the delivery as failed and puts the message back. The next "
        "delivery fails the same way, and the next, until the delivery count reaches the queue's "
        "maximum (--max-deliveries); then the broker moves the message to the dead-letter queue "
        "(RabbitMQ's quorum queue does, past its x-delivery-limit). NATS JetStream does not: "
        "after MaxDeliver it simply stops delivering the message, which stays in the stream, and "
        "says so only in an advisory; nobody is told unless someone listens for it. "
        "No Inbox row, no stock touched: the dead letter is the only trace, and it is where an "
        "operator should look.\n"
        "\n"
        "Compare duplicate-as-error, which ends in the same dead-letter queue for the opposite "
        "reason: there the work succeeded and only the duplicate check threw. A poison message "
        "belongs in the dead-letter queue; a recognised duplicate never does.",
    .hook_points =
        "BeforeCommit: the handler checks that its stock update found the book, and throws if not",
    .try_next =
        "A lower delivery limit dead-letters the poison sooner:\n"
        "  dedupsim run poison-message --max-deliveries 3 --trace\n"
        "Then see a duplicate that is wrongly treated as a failure:\n"
        "  dedupsim run duplicate-as-error",
};
const LessonRegistration kPoisonMessageLesson{kPoisonMessageScenario,
                                              {.rank = 310, .theme = Theme::kBroker}};

}  // namespace dedupsim
