// The PostgreSQL side of store/lesson_tables.h: the outbox, shipment, audit and retention
// tables on one PgConnection, in PostgreSQL's dialect. The tables are created and marked
// with the others (postgres/store.cpp).
#pragma once

#include "postgres/connection.h"
#include "store/lesson_tables.h"

namespace dedupsim {

// Rows in one of dedupsim's tables, on connection (DatabaseError for another name).
int64_t CountTableRows(PgConnection& connection, std::string_view table);

class PgLessonTables final : public LessonTables {
 public:
  // Borrows db, which must outlive this object.
  explicit PgLessonTables(PgConnection& db) : db_(db) {}

  void AddOutboxMessage(const OrderPlaced& source, const OrderPlaced& out, TimePoint now) override;
  std::vector<OrderPlaced> PendingOutboxMessages() override;
  void MarkDispatched(std::string_view message_id, TimePoint now) override;
  int64_t CountOutboxRows(bool dispatched_only) override;

  void AddShipmentRequest(std::string_view order_id, TimePoint now) override;
  int64_t CountShipmentRequests(std::string_view order_id) override;

  void AddAuditEntry(std::string_view order_id, std::string_view entry, TimePoint now) override;
  int64_t CountAuditEntries(std::string_view order_id) override;

  // BEGIN, the DELETE, the counts, COMMIT: a transaction of its own.
  CleanupResult DeleteInboxRecordsOlderThan(TimePoint now,
                                            std::chrono::milliseconds older_than) override;

  int64_t LastChanges() override { return db_.changes(); }
  int64_t CountRows(std::string_view table) override { return CountTableRows(db_, table); }

 private:
  PgConnection& db_;
};

}  // namespace dedupsim
