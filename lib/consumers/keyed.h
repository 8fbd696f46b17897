// The inbox transaction keyed on whatever value the caller chooses, for the lessons about
// choosing the key: the message's correlation id (the order's id, shared by every message
// about the order) or a value the broker assigns to each delivery (a delivery tag). In one
// transaction: claim the key, apply the change to the book's Reserved, commit; a duplicate
// key rolls back. The post's key, the MessageId, is one choice among them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/clock.h"
#include "core/message.h"
#include "store/store.h"

namespace dedupsim {

// What a message about an order asks of the stock.
enum class OrderEventType { kPlaced, kCancelled };

// OrderPlaced or OrderCancelled: the same fields, and the order's id as correlation id.
struct OrderEvent {
  OrderEventType type = OrderEventType::kPlaced;
  OrderPlaced body;  // message id, order id (the correlation id), book, quantity
};

const char* TypeName(OrderEventType type);  // "OrderPlaced", "OrderCancelled"

class KeyedReserveStock {
 public:
  static constexpr const char* kName = "inventory.order-events";

  KeyedReserveStock(Store& store, Clock& clock) : store_(store), clock_(clock) {}

  // Placed reserves the quantity, Cancelled releases it. False when the key was there.
  bool Handle(const OrderEvent& event, const std::string& key);

 private:
  Store& store_;
  Clock& clock_;
};

}  // namespace dedupsim
