// natural-key: the reservation itself is the dedup record, unique on (OrderId, BookId) in
// StockReservations; no Inbox row is written.
#include <fmt/format.h>

#include <vector>

#include "common.h"
#include "consumers/natural_key.h"
#include "scenarios.h"

namespace dedupsim {
namespace natural_key_file {
namespace {

Outcome Run(ScenarioEnv& env) {
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  std::vector<bool> processed;
  DeliverWithLostAcks(env, message, env.options.deliveries, [&](Store& store, int) {
    processed.push_back(NaturalKeyReserveStock(store, env.clock).Handle(message));
    NoteProcessed(store, processed.back(), ReservedVerdict(env, dune, env.options.quantity));
  });
  StockItem after = CurrentStock(env, dune);
  int64_t reservations = CurrentRows(env, "StockReservations");
  Outcome out;
  out.figures["deliveries"] = env.options.deliveries;
  out.figures["processed"] = processed;
  out.figures["reservations"] = reservations;
  out.figures["inboxRows"] = CurrentRows(env, "Inbox");
  out.figures["reserved"] = after.reserved;
  out.line = fmt::format("{}{} -> processed: {}; reservations: {}; {}",
                         TagColumn("natural-key"), DeliveredPhrase(env.options.deliveries),
                         BoolList(processed), reservations,
                         JudgedReserved(after.title, after.reserved, env.options.quantity));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  std::vector<bool> processed(static_cast<size_t>(o.deliveries), false);
  processed[0] = true;  // one reservation per order line, however often it arrives
  return {{"processed", processed}, {"reservations", 1}, {"inboxRows", 0}, {"reserved", o.quantity}};
}

}  // namespace
}  // namespace natural_key_file

const Scenario kNaturalKeyScenario{
    .name = "natural-key",
    .tag = "natural-key",
    .summary = "a reservation row unique on (OrderId, BookId): idempotent without an inbox",
    .in_post = false,
    .traits = kRepeatsDelivery | kAnyBackend,
    .run = &natural_key_file::Run,
    .expected = &natural_key_file::Expected,
    .lesson =
        "Before reaching for an inbox, ask whether the operation can be made idempotent by itself. \"Add 2 to Reserved\" cannot: it is a difference. \"Order X holds 2 copies of book Y\" can: it is a fact with a natural key.\n"
        "\n"
        "Here the consumer keeps one StockReservations row per order line, with (OrderId, BookId) as its primary key, and in the same transaction adds the quantity to the book's Reserved total. The second delivery's insert hits the key (SQLITE_CONSTRAINT_PRIMARYKEY), the transaction rolls back, and the consumer acknowledges. No Inbox row is written at all.\n"
        "\n"
        "The dedup now lives in the business data, so it needs no separate table and no cleanup. The price: each message type needs its own natural key worked out, and some operations (an email, a call to another system) have none.",
    .hook_points = "BeforeCommit: after the reservation insert and the stock update (unused here)",
    .try_next =
        "Deliver it four times: one reservation row, one reservation, whatever the count;\n"
        "then see it against a producer that publishes the order twice:\n"
        "  dedupsim run natural-key --deliveries 4\n"
        "  dedupsim run producer-duplicate",
};
const LessonRegistration kNaturalKeyLesson{kNaturalKeyScenario,
                                           {.rank = 90, .theme = Theme::kSideEffects}};

}  // namespace dedupsim
