// The PostgreSQL side of store/keyed_stores.h, on one PgConnection. A duplicate key aborts a
// PostgreSQL transaction (25P02), so the claims that go on in the same transaction after a
// duplicate (the hashed claim reads the stored row, the receipt claim counts) run their
// INSERT under a SAVEPOINT and roll back to it: traced, so the trace shows what the server
// needed that SQLite did not.
#pragma once

#include "postgres/connection.h"
#include "store/keyed_stores.h"

namespace dedupsim {

class PgKeyedStores final : public KeyedStores {
 public:
  // Borrows db, which must outlive it.
  explicit PgKeyedStores(PgConnection& db) : db_(db) {}
  // True when it works on db (a PgStore that was moved makes a new one).
  bool On(const PgConnection& db) const { return &db_ == &db; }

  InsertResult InsertReservation(std::string_view order_id, std::string_view book_id,
                                 int64_t quantity, TimePoint now) override;
  void UpsertReservation(std::string_view order_id, std::string_view book_id, int64_t quantity,
                         TimePoint now) override;
  void SetReserved(std::string_view book_id, int64_t reserved) override;
  int64_t ReservedByRows(std::string_view book_id) override;

  InsertResult ClaimCompletedWithHash(std::string_view message_id, std::string_view consumer,
                                      std::string_view hash, TimePoint now) override;
  InsertResult ClaimOrCountReceipt(std::string_view message_id, std::string_view consumer,
                                   TimePoint now) override;

  InsertResult ClaimLeased(std::string_view message_id, std::string_view consumer,
                           std::string_view owner, TimePoint now,
                           std::string_view expires) override;
  bool TakeOver(std::string_view message_id, std::string_view consumer, std::string_view owner,
                std::string_view expires, const std::optional<std::string>& read_owner,
                const std::optional<std::string>& read_expires) override;
  bool CompleteOwned(std::string_view message_id, std::string_view consumer, std::string_view owner,
                     TimePoint now) override;
  bool Renew(std::string_view message_id, std::string_view consumer, std::string_view owner,
             std::string_view expires) override;

 private:
  // Runs the INSERT under SAVEPOINT name when a transaction is open, and rolls back to it
  // on a duplicate key, so the transaction stays usable.
  InsertResult InsertUnderSavepoint(const char* name, std::string_view sql, const PgParams& params);

  PgConnection& db_;
};

}  // namespace dedupsim
