// The tables of the lessons beyond the post's inbox, as small interfaces by mechanism: the
// transactional outbox and the downstream consumer's shipment requests (outbox), an audit
// log a handler writes on its own (second-connection), the inbox's retention cleanup
// (retention), the count of rows a statement changed (poison-message's check), and a
// table's rows as a probe counts them (crash-before-commit). Each
// backend implements them on one store's connection, with its own SQL (lib/sqlite/
// lesson_tables.h, lib/postgres/lesson_tables.h); a consumer reaches them through
// Store::tables(), so they run inside the store's transaction when one is open.
//
// Used by one thread at a time, like the store that hands them out. Failures throw
// StoreError (store/error.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/message.h"

namespace dedupsim {

// The Outbox table: outgoing messages written in the consumer's transaction, sent later by
// a dispatcher that marks each row dispatched. An outgoing message carries OrderPlaced's
// fields (outbox.h calls it StockReserved).
class OutboxStore {
 public:
  virtual ~OutboxStore() = default;
  // Stores out (of type StockReserved) for the incoming source message, not yet dispatched.
  virtual void AddOutboxMessage(const OrderPlaced& source, const OrderPlaced& out,
                                TimePoint now) = 0;
  // Every row not yet marked dispatched, oldest first.
  virtual std::vector<OrderPlaced> PendingOutboxMessages() = 0;
  virtual void MarkDispatched(std::string_view message_id, TimePoint now) = 0;
  // Outbox rows: all of them, or those marked dispatched.
  virtual int64_t CountOutboxRows(bool dispatched_only) = 0;
};

// The downstream (shipping) consumer's work: one request per StockReserved it processed.
class ShipmentStore {
 public:
  virtual ~ShipmentStore() = default;
  virtual void AddShipmentRequest(std::string_view order_id, TimePoint now) = 0;
  virtual int64_t CountShipmentRequests(std::string_view order_id) = 0;
};

// An audit log, written by a handler outside the inbox's transaction.
class AuditStore {
 public:
  virtual ~AuditStore() = default;
  // One entry; on a connection with no open transaction it commits at once (autocommit).
  virtual void AddAuditEntry(std::string_view order_id, std::string_view entry, TimePoint now) = 0;
  virtual int64_t CountAuditEntries(std::string_view order_id) = 0;
};

struct CleanupResult {
  std::string cutoff;            // records received before this were candidates
  int64_t deleted = 0;           // completed records deleted
  int64_t kept = 0;              // Inbox rows left
  int64_t kept_in_progress = 0;  // of those, in progress and older than the cutoff
};

// The inbox's retention cleanup.
class RetentionStore {
 public:
  virtual ~RetentionStore() = default;
  // Deletes, in one transaction of its own, the Inbox records completed and received more
  // than older_than before now; a record still in progress is kept whatever its age.
  virtual CleanupResult DeleteInboxRecordsOlderThan(TimePoint now,
                                                    std::chrono::milliseconds older_than) = 0;
};

// Rows the connection's last INSERT, UPDATE or DELETE changed (a SELECT leaves it as it
// was): 0 for an UPDATE whose WHERE found no row.
class ChangeCount {
 public:
  virtual ~ChangeCount() = default;
  virtual int64_t LastChanges() = 0;
};

// Rows in a table of the schema (a fixed name: "Inbox", "StockItems", ...), read on this
// store's connection and traced like its other statements: a lesson's probe counting what
// a step left. Throws DatabaseError for a name that is not one of dedupsim's tables.
class RowCount {
 public:
  virtual ~RowCount() = default;
  virtual int64_t CountRows(std::string_view table) = 0;
};

// All of the above, on one store's connection.
class LessonTables : public OutboxStore,
                     public ShipmentStore,
                     public AuditStore,
                     public RetentionStore,
                     public ChangeCount,
                     public RowCount {};

}  // namespace dedupsim
