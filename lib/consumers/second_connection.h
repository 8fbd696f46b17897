// A handler that writes part of its work through a second connection: the inbox middleware
// looks for the key, the handler writes an audit entry through its own connection (its own
// commit, as a second DbContext's SaveChanges would), then the inbox transaction claims the
// key and reserves. A crash before the main commit rolls back the claim and the
// reservation, but not the audit entry; the redelivery writes it again.
//
// On SQLite the second connection must write before the main transaction takes the write
// lock (it would wait for it otherwise), which is why the audit entry comes first.
#pragma once

#include "clock.h"
#include "hooks.h"
#include "message.h"
#include "sqlite/connection.h"

namespace dedupsim {

class SecondConnectionReserveStock {
 public:
  static constexpr const char* kName = "inventory.reserve-stock";

  // second: another connection to the same database, committed on its own.
  SecondConnectionReserveStock(Connection& db, Connection& second, Clock& clock)
      : db_(db), second_(second), clock_(clock) {}

  Hook before_commit;

  // False when the key was found (skipped).
  bool Handle(const OrderPlaced& m);

 private:
  Connection& db_;
  Connection& second_;
  Clock& clock_;
};

int64_t CountAuditEntries(Connection& db, const std::string& order_id);

}  // namespace dedupsim
