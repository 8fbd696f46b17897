// The transactional outbox. The consumer writes its outgoing message (StockReserved, for a
// downstream consumer) to the Outbox table in the same transaction as its Inbox row and its
// stock update: all three commit together or not at all. A dispatcher sends what the
// Outbox holds and marks each row dispatched; a crash between the send and the mark sends
// it again, so the downstream consumer keeps its own inbox.
//
// For contrast, DispatchBeforeCommitReserveStock sends the outgoing message from inside
// the handler, before its transaction commits: if the transaction then rolls back, the
// message is already out, for an order that was never reserved (a ghost message).
//
// StockReserved carries the same fields as OrderPlaced (a MessageId of its own, the order,
// the book, the quantity), so the simulated broker carries it as it is.
#pragma once

#include <cstdint>
#include <string>

#include "core/clock.h"
#include "core/hooks.h"
#include "core/message.h"
#include "world/broker/broker.h"
#include "store/store.h"

namespace dedupsim {

using StockReserved = OrderPlaced;

// The outgoing message for an incoming order: its MessageId is derived from the incoming
// one, so every copy the dispatcher sends carries the same id.
StockReserved StockReservedFor(const OrderPlaced& m);

class OutboxReserveStock {
 public:
  static constexpr const char* kName = "inventory.reserve-stock";

  OutboxReserveStock(Store& db, Clock& clock) : db_(db), clock_(clock) {}

  Hook before_commit;

  // True when this delivery did the work (and stored its outgoing message); false for a
  // duplicate, whose stored messages are the dispatcher's to send.
  bool Handle(const OrderPlaced& m);

 private:
  Store& db_;
  Clock& clock_;
};

class OutboxDispatcher {
 public:
  OutboxDispatcher(Store& db, Clock& clock, Broker& downstream)
      : db_(db), clock_(clock), downstream_(downstream) {}

  // Between a send and the row's mark.
  Hook after_dispatch;

  // Sends every Outbox row not yet marked dispatched, oldest first, marking each after
  // its send. Returns how many it sent.
  int64_t DispatchPending();

 private:
  Store& db_;
  Clock& clock_;
  Broker& downstream_;
};

class DispatchBeforeCommitReserveStock {
 public:
  static constexpr const char* kName = "inventory.reserve-stock";

  DispatchBeforeCommitReserveStock(Store& db, Clock& clock, Broker& downstream)
      : db_(db), clock_(clock), downstream_(downstream) {}

  Hook before_commit;

  bool Handle(const OrderPlaced& m);

 private:
  Store& db_;
  Clock& clock_;
  Broker& downstream_;
};

// The downstream consumer: the inbox pattern around a request to ship the order.
class PrepareShipment {
 public:
  static constexpr const char* kName = "shipping.prepare-shipment";

  PrepareShipment(Store& db, Clock& clock) : db_(db), clock_(clock) {}

  // True when this delivery made the shipment request; false for a duplicate.
  bool Handle(const StockReserved& m);

 private:
  Store& db_;
  Clock& clock_;
};

// Shipment requests and Outbox rows: Store::tables() (store/lesson_tables.h).

}  // namespace dedupsim
