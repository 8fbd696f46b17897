// The pitfall of treating a duplicate as an error: the inbox consumer, except that when
// the Inbox says "already done" it throws DuplicateMessageError instead of returning, so
// the message is never acknowledged. The broker takes the exception as a failed delivery
// and redelivers until the message lands in the dead-letter queue.
#pragma once

#include <stdexcept>
#include <string>

#include "clock.h"
#include "message.h"
#include "sqlite/connection.h"

namespace dedupsim {

class DuplicateMessageError : public std::runtime_error {
 public:
  explicit DuplicateMessageError(const std::string& message_id)
      : std::runtime_error("duplicate message " + message_id) {}
};

class ThrowOnDuplicateReserveStock {
 public:
  ThrowOnDuplicateReserveStock(Connection& db, Clock& clock) : db_(db), clock_(clock) {}

  // Does the work once; throws DuplicateMessageError on every later delivery.
  void Handle(const OrderPlaced& m);

 private:
  Connection& db_;
  Clock& clock_;
};

}  // namespace dedupsim
