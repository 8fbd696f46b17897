// A handler that writes part of its work through a second connection: the inbox middleware
// looks for the key, the handler writes an audit entry through its own connection (its own
// commit, as a second DbContext's SaveChanges would), then the inbox transaction claims the
// key and reserves. A crash before the main commit rolls back the claim and the
// reservation, but not the audit entry; the redelivery writes it again.
//
// On SQLite the second connection must write before the main transaction takes the write
// lock (it would wait for the whole file otherwise), which is why the audit entry comes
// first there. A server that locks rows lets it come while the main transaction is open
// (audit_inside_main): it touches no row the main transaction holds, so it does not wait,
// and the result is the same.
#pragma once

#include <optional>

#include "core/clock.h"
#include "core/hooks.h"
#include "core/message.h"
#include "store/store.h"

namespace dedupsim {

class SecondConnectionReserveStock {
 public:
  static constexpr const char* kName = "inventory.reserve-stock";

  // second: another store on the same database, committed on its own. Both must outlive
  // the consumer.
  SecondConnectionReserveStock(Store& db, Store& second, Clock& clock)
      : db_(db), second_(second), clock_(clock) {}

  Hook before_commit;
  // Write the audit entry after the main transaction's claim and reservation, before its
  // commit, instead of before the transaction begins.
  bool audit_inside_main = false;

  // False when the key was found (skipped).
  bool Handle(const OrderPlaced& m);

 private:
  void WriteAudit(const OrderPlaced& m, TimePoint now);

  Store& db_;
  Store& second_;
  Clock& clock_;
};

}  // namespace dedupsim
