#include "consumers/throw_on_duplicate.h"

#include "consumers/idempotent.h"

namespace dedupsim {

void ThrowOnDuplicateReserveStock::Handle(const OrderPlaced& m) {
  if (!IdempotentReserveStock(store_, clock_).Handle(m)) {
    store_.Note("throw", "DuplicateMessageError", "not acked");
    throw DuplicateMessageError(m.message_id);
  }
}

}  // namespace dedupsim
