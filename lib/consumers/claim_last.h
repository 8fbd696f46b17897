// The post's second experiment: the inbox consumer with the key claimed last. In one
// transaction it updates the stock first and inserts the Inbox row after. The outcome is
// still right (a duplicate's insert fails and its transaction rolls back, update
// included), but a second copy now does its stock update before it finds out, and on
// SQLite it waits for the write lock at that UPDATE rather than at the Inbox insert.
//
// The consumer reports what happened inside its transaction, so a scenario can show it:
// rows its UPDATE changed, Reserved as the transaction saw it, and the busy handler's
// calls and wait during each of the two statements.
#pragma once

#include <cstdint>

#include "core/clock.h"
#include "core/hooks.h"
#include "core/message.h"
#include "sqlite/connection.h"
#include "store/store.h"

namespace dedupsim {

struct ClaimLastReport {
  bool processed = false;
  int64_t stock_update_changes = 0;  // Changes() right after the UPDATE
  int64_t reserved_inside = 0;       // Reserved read back inside the transaction
  BusyStats stock_update_wait;       // busy handler during the UPDATE
  BusyStats claim_wait;              // busy handler during the Inbox INSERT
  bool rolled_back = false;          // the transaction ended in ROLLBACK
};

class ClaimLastReserveStock {
 public:
  static constexpr const char* kName = "inventory.reserve-stock";

  ClaimLastReserveStock(Connection& db, Clock& clock) : db_(&db), clock_(clock) {}
  // Through the store seam (either backend): the same steps; the report's busy figures,
  // SQLite's busy handler's, stay 0, and stock_update_changes is not measured (0).
  ClaimLastReserveStock(Store& store, Clock& clock) : store_(&store), clock_(clock) {}

  Hook before_commit;

  // What this delivery did; processed is false for a duplicate.
  ClaimLastReport Handle(const OrderPlaced& m);

 private:
  ClaimLastReport HandleOnStore(const OrderPlaced& m);

  Connection* db_ = nullptr;
  Store* store_ = nullptr;
  Clock& clock_;
};

}  // namespace dedupsim
