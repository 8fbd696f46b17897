// content-mismatch: the Inbox row keeps the payload hash. A second message with the same
// id and the same hash is a duplicate, acked; one with another hash is dead-lettered with
// an alert, never processed and never silently dropped.
#include <fmt/format.h>

#include <memory>
#include <vector>

#include "world/broker/broker.h"
#include "common.h"
#include "consumers/payload_checked.h"
#include "scenarios.h"

namespace dedupsim {
namespace content_mismatch_file {
namespace {

Outcome Run(ScenarioEnv& env) {
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  OrderPlaced changed = message;  // the id reused for other content
  changed.quantity = message.quantity + 1;

  std::unique_ptr<Broker> broker = OpenBroker(env, BrokerOptions{});
  broker->Send(message);
  broker->Send(message);  // the same message again: a true duplicate
  broker->Send(changed);

  std::vector<std::string> results;
  std::vector<std::string> alerts;
  std::string stored_hash;
  std::string mismatch_hash;
  Drain(*broker, [&](const Delivery& d) {
    std::unique_ptr<Store> store = OpenStore(env, "A");
    PayloadCheckResult r = PayloadCheckedReserveStock(*store, env.clock).Handle(d.message);
    results.emplace_back(ToString(r.result));
    // Right when the first content took effect once, read back now: the copy skipped, the
    // other content refused and raised for an operator, not processed.
    NoteOutcome(*store, ToString(r.result), ReservedVerdictApart(env, message));
    if (r.result != PayloadCheck::kContentMismatch) return Verdict{};  // processed or duplicate: ack
    stored_hash = r.stored_hash;
    mismatch_hash = r.hash;
    std::string text = fmt::format(
        "message {} arrived again with other content (payload hash {}, recorded {}): "
        "sent to the dead-letter queue, not processed",
        d.message.message_id, r.hash, r.stored_hash);
    alerts.push_back(fmt::format("content-mismatch: {}", text));
    Verdict dead{Disposition::kDeadLetter, "ContentMismatch", text};
    // Refused and moved where an operator looks, with an alert: right, as the line's
    // "dead-lettered: 1".
    dead.judged = kVerdictRight;
    // The alert says the message was sent to the dead-letter queue: raised once it was (on
    // RabbitMQ its arrival there is the server's later step, so it does not say "dead-lettered").
    std::shared_ptr<Store> raiser = std::move(store);
    dead.then = [raiser, text] { raiser->Note("alert", text, "raised"); };
    return dead;
  });

  StockItem after = CurrentStock(env, dune);
  const BrokerStats& stats = broker->stats();
  Outcome out;
  out.figures["results"] = results;
  out.figures["acked"] = stats.acked;
  out.figures["deadLettered"] = stats.dead_lettered;
  out.figures["storedHash"] = stored_hash;
  out.figures["mismatchHash"] = mismatch_hash;
  out.figures["alerts"] = alerts;
  out.figures["reserved"] = after.reserved;
  out.figures["deadLetters"] = nlohmann::ordered_json::array();
  for (const DeadLetter& letter : broker->dead_letters()) {
    out.figures["deadLetters"].push_back({{"messageId", letter.delivery.message.message_id},
                                          {"reason", letter.reason}});
  }
  out.line = fmt::format(
      "{}same id, same content -> {}; same id, other content -> {} ({}, alerts: {}); {}",
      TagColumn("content-mismatch"), results.size() > 1 ? results[1] : "-",
      results.size() > 2 ? results[2] : "-",
      // Right when the one message of other content is what the broker holds as a dead
      // letter, read back from it: not processed, and not silently acked either.
      Judged(fmt::format("dead-lettered: {}", stats.dead_lettered),
             broker->dead_letters().size() == 1 &&
                 broker->dead_letters().front().delivery.message.quantity == changed.quantity),
      alerts.size(),
      JudgedReserved(after.title, after.reserved, env.options.quantity));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  return {{"results", {"Processed", "Duplicate", "ContentMismatch"}},
          {"acked", 2},
          {"deadLettered", 1},
          {"reserved", o.quantity}};  // the other content was never applied
}

}  // namespace
}  // namespace content_mismatch_file

const Scenario kContentMismatchScenario{
    .name = "content-mismatch",
    .tag = "content-mismatch",
    .summary = "same id, other payload: the stored hash tells it from a duplicate; dead-lettered with an alert",
    .in_post = false,
    .traits = kAnyBackend | kRealBroker,
    .run = &content_mismatch_file::Run,
    .expected = &content_mismatch_file::Expected,
    .lesson =
        "An Inbox keyed on the message id assumes one id means one content. Usually that holds. When it does not (a producer bug that reuses ids, a hand-edited replay), the plain inbox would skip the second message as a duplicate and its content would vanish without a trace.\n"
        "\n"
        "So this consumer stores a hash of the payload in the Inbox row (the PayloadHash column, added by schema version 2; an older dedupsim database is upgraded on open). On a duplicate key it compares hashes. The same message again has the same hash: a true duplicate, acked. The same id with a different quantity has another hash: the consumer neither applies it nor drops it. It sends the message to the dead-letter queue with the reason ContentMismatch and raises an alert (printed on stderr, and in the JSON as alerts) for a person to look at.\n"
        "\n"
        "Dune stays reserved for the first message only.",
    .hook_points = "BeforeCommit: after the Inbox row (with its hash) and the stock update (unused here)",
    .try_next =
        "See the two hashes and the dead-lettering in the broker's steps:\n"
        "  dedupsim run content-mismatch --format json --trace",
};
const LessonRegistration kContentMismatchLesson{kContentMismatchScenario,
                                                {.rank = 160, .theme = Theme::kKeys}};

}  // namespace dedupsim
