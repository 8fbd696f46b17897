// random-id: a producer that retries a send makes a new random MessageId each time, so
// the retry is a new message to everyone downstream. Made once and kept, the id lets the
// inbox see the retry for what it is.
#include <fmt/format.h>

#include <set>
#include <vector>

#include "world/broker/broker.h"
#include "common.h"
#include "consumers/idempotent.h"
#include "scenarios.h"

namespace dedupsim {
namespace random_id_file {
namespace {

enum class IdPolicy { kNewPerSend, kMadeOnce };

struct Part {
  int64_t message_ids = 0;  // distinct ids the consumer received
  std::vector<bool> processed;
  int64_t reserved = 0;
};

// The producer sends the order, gets no confirmation, and sends it again.
Part PublishWithRetry(ScenarioEnv& env, IdPolicy policy) {
  env.recorder.BeginPart(policy == IdPolicy::kNewPerSend ? "new id per send" : "id made once");
  StockItem dune = Restock(env);
  OrderPlaced order = NewOrder(env, dune);
  std::unique_ptr<Broker> broker = OpenBroker(env, BrokerOptions{});
  broker->Send(order);
  OrderPlaced retry = order;
  if (policy == IdPolicy::kNewPerSend) retry.message_id = env.ids.Next();
  broker->Send(retry);

  Part part;
  std::set<std::string> ids;
  Drain(*broker, [&](const Delivery& d) {
    std::unique_ptr<Store> store = OpenStore(env, "A");
    part.processed.push_back(IdempotentReserveStock(*store, env.clock).Handle(d.message));
    NoteProcessed(*store, part.processed.back(), ReservedVerdict(env, dune, env.options.quantity));
    ids.insert(d.message.message_id);
    return Verdict{};  // processed or skipped: acked either way
  });
  part.message_ids = static_cast<int64_t>(ids.size());
  part.reserved = CurrentStock(env, dune).reserved;
  return part;
}

std::string Describe(const Part& part, int64_t quantity) {
  return fmt::format("message ids: {}, processed: {}; {}", part.message_ids,
                     BoolList(part.processed), JudgedReserved("Dune", part.reserved, quantity));
}

Outcome Run(ScenarioEnv& env) {
  Part fresh = PublishWithRetry(env, IdPolicy::kNewPerSend);
  Part once = PublishWithRetry(env, IdPolicy::kMadeOnce);
  Outcome out;
  out.figures["newIdMessageIds"] = fresh.message_ids;
  out.figures["newIdProcessed"] = fresh.processed;
  out.figures["newIdReserved"] = fresh.reserved;
  out.figures["madeOnceMessageIds"] = once.message_ids;
  out.figures["madeOnceProcessed"] = once.processed;
  out.figures["madeOnceReserved"] = once.reserved;
  out.figures["reserved"] = fresh.reserved;
  out.line = fmt::format("{}producer sent twice -> new id per send: {}; id made once: {}",
                         TagColumn("random-id"), Describe(fresh, env.options.quantity), Describe(once, env.options.quantity));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  return {{"newIdMessageIds", 2},
          {"newIdProcessed", {true, true}},
          {"newIdReserved", 2 * o.quantity},
          {"madeOnceMessageIds", 1},
          {"madeOnceProcessed", {true, false}},
          {"madeOnceReserved", o.quantity},
          {"reserved", 2 * o.quantity}};
}

}  // namespace
}  // namespace random_id_file

const Scenario kRandomIdScenario{
    .name = "random-id",
    .tag = "random-id",
    .summary = "a producer retry with a fresh random id defeats the inbox; an id made once does not",
    .in_post = false,
    .traits = kAnyBackend,
    .run = &random_id_file::Run,
    .expected = &random_id_file::Expected,
    .lesson =
        "The producer publishes OrderPlaced, does not hear back from the broker in time, and publishes it again. Both sends arrive. Whether the consumer can tell them apart depends on one line in the producer: where the MessageId is made.\n"
        "\n"
        "If the id is made inside the send (a new random id per attempt), the retry carries a different id. The broker sees two messages, the inbox sees two keys, and the order is reserved twice. No consumer-side mechanism can repair this: the information that the two are one was thrown away before the message left.\n"
        "\n"
        "If the id is made once, when the message is created, and stored with it (the job of an outbox), the retry carries the same id. The second delivery hits the Inbox key and is skipped: reserved once.",
    .hook_points = "none: the retry is the producer's, the consumer runs straight through",
    .try_next =
        "Follow each message id through the inbox, for a three-book order:\n"
        "  dedupsim run random-id --quantity 3 --trace\n"
        "Then let the broker drop the same-id retry before it is ever delivered:\n"
        "  dedupsim run broker-dedup",
};
const LessonRegistration kRandomIdLesson{kRandomIdScenario, {.rank = 130, .theme = Theme::kKeys}};

}  // namespace dedupsim
