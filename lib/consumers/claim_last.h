// The post's second experiment: the inbox consumer with the key claimed last. In one
// transaction it updates the stock first and inserts the Inbox row after. The outcome is
// still right (a duplicate's insert fails and its transaction rolls back, update
// included), but a second copy now does its stock update before it finds out, and on
// SQLite it waits for the write lock at that UPDATE rather than at the Inbox insert.
//
// The consumer reports what happened inside its transaction, so a scenario can show it:
// rows its UPDATE changed, Reserved as the transaction saw it, and, where the store
// measures its own lock waits (Store::lock_waits: SQLite's busy handler), the waits during
// each of the two statements. On a store that keeps no such measure (PostgreSQL: its waits
// are the server's, Store::WatchedStatements) those two figures are absent, never zero.
#pragma once

#include <cstdint>
#include <optional>

#include "core/clock.h"
#include "core/hooks.h"
#include "core/message.h"
#include "store/lock_waits.h"
#include "store/store.h"

namespace dedupsim {

struct ClaimLastReport {
  bool processed = false;
  int64_t stock_update_changes = 0;          // rows the UPDATE changed (LessonTables::LastChanges)
  int64_t reserved_inside = 0;               // Reserved read back inside the transaction
  std::optional<BusyStats> stock_update_wait;  // the store's lock waits during the UPDATE
  std::optional<BusyStats> claim_wait;         // ... during the Inbox INSERT
  bool rolled_back = false;                  // the transaction ended in ROLLBACK
};

class ClaimLastReserveStock {
 public:
  static constexpr const char* kName = "inventory.reserve-stock";

  // store must outlive the consumer.
  ClaimLastReserveStock(Store& store, Clock& clock) : store_(store), clock_(clock) {}

  Hook before_commit;

  // What this delivery did; processed is false for a duplicate.
  ClaimLastReport Handle(const OrderPlaced& m);

 private:
  Store& store_;
  Clock& clock_;
};

}  // namespace dedupsim
