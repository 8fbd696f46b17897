// The SQLite side of store/lesson_tables.h: the outbox, shipment, audit and retention
// tables on one Connection, with the SQL the consumers ran on the connection before the
// seam (so SQLite traces are unchanged).
#pragma once

#include "sqlite/connection.h"
#include "store/lesson_tables.h"

namespace dedupsim {

class SqliteLessonTables final : public LessonTables {
 public:
  // Borrows db, which must outlive this object.
  explicit SqliteLessonTables(Connection& db) : db_(db) {}

  void AddOutboxMessage(const OrderPlaced& source, const OrderPlaced& out, TimePoint now) override;
  std::vector<OrderPlaced> PendingOutboxMessages() override;
  void MarkDispatched(std::string_view message_id, TimePoint now) override;
  int64_t CountOutboxRows(bool dispatched_only) override;

  void AddShipmentRequest(std::string_view order_id, TimePoint now) override;
  int64_t CountShipmentRequests(std::string_view order_id) override;

  void AddAuditEntry(std::string_view order_id, std::string_view entry, TimePoint now) override;
  int64_t CountAuditEntries(std::string_view order_id) override;

  CleanupResult DeleteInboxRecordsOlderThan(TimePoint now,
                                            std::chrono::milliseconds older_than) override;

  int64_t LastChanges() override { return db_.Changes(); }
  int64_t CountRows(std::string_view table) override;

 private:
  Connection& db_;
};

}  // namespace dedupsim
