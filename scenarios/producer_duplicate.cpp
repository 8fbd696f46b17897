// producer-duplicate: the post's third experiment. The producer publishes the same order
// twice under two MessageIds. The inbox, keyed on the message id, takes them for two
// messages; the natural key (OrderId, BookId) sees one order.
#include <fmt/format.h>

#include <set>
#include <vector>

#include "common.h"
#include "consumers/idempotent.h"
#include "consumers/natural_key.h"
#include "scenarios.h"

namespace dedupsim {
namespace producer_duplicate_file {
namespace {

struct Part {
  std::vector<bool> processed;
  int64_t reserved = 0;
};

// The same order under two message ids, each delivered once to handle(store, message).
template <typename Handle>
Part DeliverBoth(ScenarioEnv& env, const char* title, Handle handle, int64_t* distinct_ids) {
  env.recorder.BeginPart(title);
  StockItem dune = Restock(env);
  OrderPlaced first = NewOrder(env, dune);
  OrderPlaced second = first;
  second.message_id = env.ids.Next();  // published again: a new message, a new id
  Part part;
  std::set<std::string> ids;
  for (const OrderPlaced& message : {first, second}) {
    std::unique_ptr<Store> store = OpenStore(env, "A", Delivered(message, 1));
    part.processed.push_back(handle(*store, message));
    // One order under two ids: right while it is reserved once.
    NoteProcessed(*store, part.processed.back(), ReservedVerdict(env, dune, env.options.quantity));
    ids.insert(message.message_id);
  }
  *distinct_ids = static_cast<int64_t>(ids.size());
  part.reserved = CurrentStock(env, dune).reserved;
  return part;
}

Outcome Run(ScenarioEnv& env) {
  int64_t message_ids = 0;
  Part inbox = DeliverBoth(
      env, "inbox",
      [&env](Store& store, const OrderPlaced& m) {
        return IdempotentReserveStock(store, env.clock).Handle(m);
      },
      &message_ids);
  Part natural = DeliverBoth(
      env, "natural key",
      [&env](Store& store, const OrderPlaced& m) {
        return NaturalKeyReserveStock(store, env.clock).Handle(m);
      },
      &message_ids);
  Outcome out;
  out.figures["messageIds"] = message_ids;
  out.figures["inboxProcessed"] = inbox.processed;
  out.figures["inboxReserved"] = inbox.reserved;
  out.figures["naturalKeyProcessed"] = natural.processed;
  out.figures["naturalKeyReserved"] = natural.reserved;
  out.figures["reserved"] = inbox.reserved;
  out.line = fmt::format(
      "{}same order, {} message ids -> inbox: processed: {}; {}; natural key: processed: {}; {}",
      TagColumn("producer-duplicate"), message_ids, BoolList(inbox.processed),
      JudgedReserved("Dune", inbox.reserved, env.options.quantity), BoolList(natural.processed),
      JudgedReserved("Dune", natural.reserved, env.options.quantity));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  return {{"messageIds", 2},
          {"inboxProcessed", {true, true}},  // two ids: two messages, as far as it can tell
          {"inboxReserved", 2 * o.quantity},
          {"naturalKeyProcessed", {true, false}},  // one order line: one reservation
          {"naturalKeyReserved", o.quantity},
          {"reserved", 2 * o.quantity}};
}

}  // namespace
}  // namespace producer_duplicate_file

const Scenario kProducerDuplicateScenario{
    .name = "producer-duplicate",
    .tag = "producer-duplicate",
    .summary = "the same order published twice under two MessageIds: inbox reserves twice, natural key once",
    .in_post = false,
    .traits = kAnyBackend,
    .run = &producer_duplicate_file::Run,
    .expected = &producer_duplicate_file::Expected,
    .lesson =
        "Not every duplicate comes from the broker. Here the producer published the same order twice, and each publish got its own MessageId: to the broker, and to anything keyed on the message id, these are two different messages.\n"
        "\n"
        "The inbox consumer does exactly what it is built to do: two ids, two Inbox rows, two reservations. Dune ends with twice the order's quantity reserved, and the inbox saw nothing wrong.\n"
        "\n"
        "The natural-key consumer keys on what the message is about, (OrderId, BookId). The second message carries the same order line, its reservation insert hits the key, and Dune is reserved once. The inbox guards against the same message arriving twice; only a business key guards against the same fact being sent twice. Where producers can repeat themselves, the two together cover both.",
    .hook_points = "none: each message is handled straight through",
    .try_next =
        "Order three books: the inbox doubles them to 6, the natural key keeps 3:\n"
        "  dedupsim run producer-duplicate --quantity 3\n"
        "Then the producer-side cause, and the fix of making the id once:\n"
        "  dedupsim run random-id",
};
const LessonRegistration kProducerDuplicateLesson{kProducerDuplicateScenario,
                                                  {.rank = 120, .theme = Theme::kKeys}};

}  // namespace dedupsim
