// The pitfall of treating a duplicate as an error: the inbox consumer, except that when
// the Inbox says "already done" it throws DuplicateMessageError instead of returning, so
// the message is never acknowledged. The broker takes the exception as a failed delivery
// and redelivers until the message lands in the dead-letter queue.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "core/clock.h"
#include "core/message.h"
#include "store/store.h"

namespace dedupsim {

class DuplicateMessageError : public std::runtime_error {
 public:
  explicit DuplicateMessageError(const std::string& message_id)
      : std::runtime_error("duplicate message " + message_id) {}
};

class ThrowOnDuplicateReserveStock {
 public:
  ThrowOnDuplicateReserveStock(Store& store, Clock& clock) : store_(store), clock_(clock) {}

  // Does the work once; throws DuplicateMessageError on every later delivery.
  void Handle(const OrderPlaced& m);

 private:
  Store& store_;
  Clock& clock_;
};

}  // namespace dedupsim
