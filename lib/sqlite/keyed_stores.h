// The SQLite side of store/keyed_stores.h, on one Connection: the statements the consumers
// ran on the connection before the seam, with the same SQL, so their traces are unchanged.
#pragma once

#include "sqlite/connection.h"
#include "store/keyed_stores.h"

namespace dedupsim {

class SqliteKeyedStores final : public KeyedStores {
 public:
  // Borrows db, which must outlive it.
  explicit SqliteKeyedStores(Connection& db) : db_(db) {}

  InsertResult InsertReservation(std::string_view order_id, std::string_view book_id,
                                 int64_t quantity, TimePoint now) override;
  void UpsertReservation(std::string_view order_id, std::string_view book_id, int64_t quantity,
                         TimePoint now) override;
  void SetReserved(std::string_view book_id, int64_t reserved) override;
  int64_t ReservedByRows(std::string_view book_id) override;

  // SQLite's failed INSERT undoes only itself: no savepoint needed.
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
  Connection& db_;
};

}  // namespace dedupsim
