// The inbox consumer that also remembers what it processed: the Inbox row carries the
// payload hash (schema version 2). When the key is already there it compares hashes. The
// same hash is an ordinary duplicate, to acknowledge. Another hash means a different
// message under a reused id: that is not a duplicate, and it must neither be processed nor
// silently dropped; the consumer reports kContentMismatch so the caller dead-letters it
// and raises an alert.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/hooks.h"
#include "core/message.h"
#include "store/store.h"

namespace dedupsim {

enum class PayloadCheck { kProcessed, kDuplicate, kContentMismatch };

std::string_view ToString(PayloadCheck result);  // "Processed", "Duplicate", "ContentMismatch"

struct PayloadCheckResult {
  PayloadCheck result = PayloadCheck::kProcessed;
  std::string hash;         // of this delivery
  std::string stored_hash;  // of the row found, for a duplicate or a mismatch ("" if none)
};

class PayloadCheckedReserveStock {
 public:
  static constexpr const char* kName = "inventory.reserve-stock";

  PayloadCheckedReserveStock(Store& store, Clock& clock) : store_(store), clock_(clock) {}

  Hook before_commit;

  PayloadCheckResult Handle(const OrderPlaced& m);

 private:
  Store& store_;
  Clock& clock_;
};

}  // namespace dedupsim
