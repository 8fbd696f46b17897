// outbox: the consumer's outgoing StockReserved is written to the Outbox in its transaction
// and sent by a dispatcher. A duplicate of the incoming message finds the key and leaves the
// stored message to the dispatcher; the dispatcher crashes after a send and before its mark,
// sends again after its restart, and the downstream consumer's inbox drops the copy. Then
// the same order with the message sent before commit: the transaction rolls back, the
// message is already out (a ghost).
#include "consumers/outbox.h"

#include <fmt/format.h>

#include <stdexcept>

#include "world/broker/broker.h"
#include "common.h"
#include "scenarios.h"
#include "store/lesson_tables.h"

namespace dedupsim {
namespace outbox_file {
namespace {

// The ghost's transaction fails after its send: a real exception out of the handler.
class WorkFailed : public std::runtime_error {
 public:
  WorkFailed() : std::runtime_error("its work threw before its commit") {}
};

struct Downstream {
  int64_t deliveries = 0;
  int64_t processed = 0;  // deliveries that made a shipment request
};

// The business's verdict on a downstream delivery of an order's StockReserved, read back
// after it: right when the order's shipment requests are what its stock says they must be,
// one where Dune's Reserved holds the order (it took effect), none where it does not (a
// ghost: its transaction rolled back after the send).
const char* ShipmentVerdict(ScenarioEnv& env, const OrderPlaced& m) {
  std::unique_ptr<Store> probe = OpenUntraced(env);
  const int64_t owed = probe->ReadStock(m.book_id).reserved == m.quantity ? 1 : 0;
  return probe->tables().CountShipmentRequests(m.order_id) == owed ? kVerdictRight : kVerdictWrong;
}

Downstream DrainDownstream(ScenarioEnv& env, Broker& queue) {
  Downstream d;
  d.deliveries = Drain(queue, [&](const Delivery& delivery) {
    std::unique_ptr<Store> db = OpenStore(env, "downstream");
    const bool processed = PrepareShipment(*db, env.clock).Handle(delivery.message);
    if (processed) d.processed++;
    NoteProcessed(*db, processed, ShipmentVerdict(env, delivery.message));
    return Verdict{Disposition::kAck};
  });
  return d;
}

Outcome Run(ScenarioEnv& env) {
  env.recorder.BeginPart("outbox: delivered twice, the dispatcher crashes after its send");
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  std::unique_ptr<Broker> incoming = OpenBroker(env, BrokerOptions{.max_delivery_count = env.options.deliveries});
  std::unique_ptr<Broker> downstream = OpenBroker(env, BrokerOptions{});
  incoming->Send(message);

  // Every ack but the last is lost: the duplicates arrive after the commit, before dispatch.
  int64_t handled = 0;
  int64_t skipped = 0;
  Drain(*incoming, [&](const Delivery& d) {
    std::unique_ptr<Store> db = OpenStore(env, "A");
    const bool processed = OutboxReserveStock(*db, env.clock).Handle(d.message);
    if (processed) {
      handled++;
    } else {
      skipped++;
    }
    NoteProcessed(*db, processed, ReservedVerdict(env, dune, env.options.quantity));
    return d.delivery_count < env.options.deliveries ? Verdict{Disposition::kAckLost}
                                                     : Verdict{Disposition::kAck};
  });

  // The dispatcher sends, then dies before marking the row; its restart sends again.
  bool dispatcher_crashed = false;
  {
    std::unique_ptr<Store> db = OpenActorStore(env, "dispatcher", kActorDispatcher);
    OutboxDispatcher dispatcher(*db, env.clock, *downstream);
    dispatcher.after_dispatch = CrashHook("AfterDispatch");
    try {
      dispatcher.DispatchPending();
    } catch (const SimulatedCrash&) {
      dispatcher_crashed = true;
    }
  }
  int64_t dispatched_after_restart = 0;
  {
    std::unique_ptr<Store> db = OpenActorStore(env, "dispatcher", kActorDispatcher);
    dispatched_after_restart = OutboxDispatcher(*db, env.clock, *downstream).DispatchPending();
  }
  Downstream shipped = DrainDownstream(env, *downstream);

  std::unique_ptr<Store> probe = OpenUntraced(env);
  const int64_t outbox_rows = probe->tables().CountOutboxRows(false);
  const int64_t outbox_dispatched = probe->tables().CountOutboxRows(true);
  const int64_t shipments = probe->tables().CountShipmentRequests(message.order_id);
  const int64_t reserved = probe->ReadStock(dune.book_id).reserved;

  // The ghost: a new order whose handler sends before its transaction, which then fails.
  env.recorder.BeginPart("sent before commit, then rolled back");
  StockItem ghost_book = Restock(env);
  OrderPlaced ghost = NewOrder(env, ghost_book);
  std::unique_ptr<Broker> ghost_queue = OpenBroker(env, BrokerOptions{});
  bool ghost_rolled_back = false;
  {
    std::unique_ptr<Store> db = OpenStore(env, "A");
    DispatchBeforeCommitReserveStock consumer(*db, env.clock, *ghost_queue);
    // Said as it throws, inside its transaction: the failure comes before the ROLLBACK it
    // causes (noted in the catch, it was drawn after it).
    consumer.before_commit = [&db] {
      db->Note("fail", WorkFailed().what(), "");
      throw WorkFailed();
    };
    try {
      consumer.Handle(ghost);
    } catch (const WorkFailed&) {
      ghost_rolled_back = !db->InTransaction();
    }
  }
  const int64_t ghost_sent = ghost_queue->stats().accepted;
  Downstream ghost_shipped = DrainDownstream(env, *ghost_queue);
  std::unique_ptr<Store> ghost_probe = OpenUntraced(env);
  const int64_t ghost_shipments = ghost_probe->tables().CountShipmentRequests(ghost.order_id);
  const int64_t ghost_reserved = ghost_probe->ReadStock(ghost_book.book_id).reserved;
  const int64_t ghost_outbox = CurrentRows(env, "Outbox");

  const int64_t dispatches = downstream->stats().accepted;
  Outcome out;
  out.figures["deliveries"] = incoming->stats().deliveries;
  out.figures["handlerInvocations"] = handled;
  out.figures["duplicatesSkipped"] = skipped;
  out.figures["dispatcherCrashed"] = dispatcher_crashed;
  out.figures["dispatchedAfterRestart"] = dispatched_after_restart;
  out.figures["dispatches"] = dispatches;
  out.figures["outboxRows"] = outbox_rows;
  out.figures["outboxDispatched"] = outbox_dispatched;
  out.figures["downstreamDeliveries"] = shipped.deliveries;
  out.figures["downstreamProcessed"] = shipped.processed;
  out.figures["shipmentRequests"] = shipments;
  out.figures["reserved"] = reserved;
  out.figures["ghostRolledBack"] = ghost_rolled_back;
  out.figures["ghostDispatches"] = ghost_sent;
  out.figures["ghostOutboxRows"] = ghost_outbox;
  out.figures["ghostDownstreamProcessed"] = ghost_shipped.processed;
  out.figures["ghostShipmentRequests"] = ghost_shipments;
  out.figures["ghostReserved"] = ghost_reserved;
  out.line = fmt::format(
      "{}{}, dispatcher crashed after send -> handler ran: {}, dispatches: {}, {}; {}; sent "
      "before commit, rolled back -> {}, {}, {} reserved: {}",
      TagColumn("outbox"), DeliveredPhrase(static_cast<int>(incoming->stats().deliveries)), handled,
      dispatches,
      Judged(fmt::format("downstream processed: {}", shipped.processed), shipped.processed == 1),
      JudgedReserved(dune.title, reserved, env.options.quantity),
      // The order was rolled back: nothing may have left it.
      Judged(fmt::format("ghost messages: {}", ghost_sent), ghost_sent == 0),
      Judged(fmt::format("downstream processed: {}", ghost_shipped.processed),
             ghost_shipped.processed == 0),
      ghost_book.title, ghost_reserved);
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  return {{"deliveries", o.deliveries},
          {"handlerInvocations", 1},
          {"duplicatesSkipped", o.deliveries - 1},
          {"dispatcherCrashed", true},
          {"dispatchedAfterRestart", 1},
          {"dispatches", 2},
          {"outboxRows", 1},
          {"outboxDispatched", 1},
          {"downstreamDeliveries", 2},
          {"downstreamProcessed", 1},
          {"shipmentRequests", 1},
          {"reserved", o.quantity},
          {"ghostRolledBack", true},
          {"ghostDispatches", 1},
          {"ghostOutboxRows", 0},
          {"ghostDownstreamProcessed", 1},
          {"ghostShipmentRequests", 1},
          {"ghostReserved", 0}};
}

}  // namespace
}  // namespace outbox_file

const Scenario kOutboxScenario{
    .name = "outbox",
    .tag = "outbox",
    .summary = "outgoing messages stored in the consumer's transaction, sent by a dispatcher",
    .in_post = false,
    .traits = kRepeatsDelivery | kAnyBackend,
    .run = &outbox_file::Run,
    .expected = &outbox_file::Expected,
    .lesson =
        "A consumer that reserves stock also has to tell the next service (StockReserved, for "
        "shipping). Sending it from the handler ties the send to nothing: the transaction may "
        "still fail, or commit after a send that was lost. The transactional outbox writes the "
        "outgoing message to an Outbox table in the same transaction as the Inbox row and the "
        "stock update, and a dispatcher sends what the Outbox holds and marks each row "
        "dispatched.\n"
        "\n"
        "The incoming message is delivered --deliveries times (the acks are lost). The first "
        "delivery commits all three rows; the duplicates find the key and skip, and the handler "
        "never runs again: the stored StockReserved is the dispatcher's to send. The dispatcher "
        "sends it and dies before marking the row (hook AfterDispatch); restarted, it finds the "
        "row unmarked and sends it again. Both copies carry the same MessageId, so the downstream "
        "consumer's own inbox processes the first and drops the second: one shipment request. The "
        "outbox makes sending at-least-once; the receiver's inbox makes it count once.\n"
        "\n"
        "Then a second order is handled the other way: the handler sends StockReserved before its "
        "transaction commits, and the transaction then fails and rolls back. Nothing was reserved "
        "and the Outbox is empty, but the message is out, and the downstream consumer prepares a "
        "shipment for an order that does not exist: a ghost message.",
    .hook_points =
        "AfterDispatch: the dispatcher dies between a send and the row's mark; BeforeCommit: the "
        "ghost's handler fails after its send",
    .try_next =
        "More duplicates of the incoming message still run the handler once:\n"
        "  dedupsim run outbox --deliveries 4 --trace\n"
        "See the same hazard for an email, where no downstream inbox can drop the copy:\n"
        "  dedupsim run optimistic-email",
};
const LessonRegistration kOutboxLesson{kOutboxScenario,
                                       {.rank = 230, .theme = Theme::kSideEffects}};

}  // namespace dedupsim
