// More of what a consumer may ask of a database, by mechanism, beside store/store.h: the
// reservation row keyed on the order line (natural-key, absolute-write), the inbox claim that
// keeps the payload hash (content-mismatch), the claim that counts receipts
// (receive-count), the leased claim (orphan-claim). Each backend implements them with its
// own SQL on the store's connection (lib/sqlite/keyed_stores.h, lib/postgres/keyed_stores.h);
// Store::keyed() hands them out.
//
// Where the backends differ after a duplicate key: SQLite's failed INSERT undoes only
// itself, PostgreSQL aborts the whole transaction (25P02). The claims below that go on in
// the same transaction after a duplicate run their INSERT under a SAVEPOINT on PostgreSQL,
// and say so on the trace (the SAVEPOINT statements are traced like any other).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "store/records.h"

namespace dedupsim {

// StockReservations: one row per order line, unique on (OrderId, BookId).
class ReservationStore {
 public:
  virtual ~ReservationStore() = default;
  // Inserts the order line's reservation; kDuplicateKey when the line is already reserved
  // (after it, PostgreSQL's transaction is aborted: roll it back).
  virtual InsertResult InsertReservation(std::string_view order_id, std::string_view book_id,
                                         int64_t quantity, TimePoint now) = 0;
  // Writes the order line's reservation to an absolute Quantity (insert or update).
  virtual void UpsertReservation(std::string_view order_id, std::string_view book_id,
                                 int64_t quantity, TimePoint now) = 0;
  // Sets the book's Reserved to an absolute value.
  virtual void SetReserved(std::string_view book_id, int64_t reserved) = 0;
  // The book's reserved total as the reservation rows say: the sum of their quantities.
  virtual int64_t ReservedByRows(std::string_view book_id) = 0;
};

// The Inbox row (MessageId, Consumer) that keeps the payload hash.
class HashedInboxStore {
 public:
  virtual ~HashedInboxStore() = default;
  // Inserts a completed row with the hash. After kDuplicateKey the open transaction is
  // still usable (to read the stored row), on either backend.
  virtual InsertResult ClaimCompletedWithHash(std::string_view message_id,
                                              std::string_view consumer, std::string_view hash,
                                              TimePoint now) = 0;
};

// The Inbox row that counts every delivery of its key (ReceiveCount, LastReceivedAt).
class ReceiptStore {
 public:
  virtual ~ReceiptStore() = default;
  // Inserts a completed row; on kDuplicateKey, counts this receipt on the existing row
  // instead, in the same open transaction.
  virtual InsertResult ClaimOrCountReceipt(std::string_view message_id, std::string_view consumer,
                                           TimePoint now) = 0;
};

// The Inbox row as a claim in progress with an owner and a lease (Owner, LeaseExpiresAt).
// Timestamps are FormatTimestamp's text, which sorts as time does.
class LeaseStore {
 public:
  virtual ~LeaseStore() = default;
  // Inserts the claim in progress, owned until expires.
  virtual InsertResult ClaimLeased(std::string_view message_id, std::string_view consumer,
                                   std::string_view owner, TimePoint now,
                                   std::string_view expires) = 0;
  // Takes an uncompleted claim over, only if its owner and expiry are still the ones read
  // (a compare-and-set); true when it changed hands.
  virtual bool TakeOver(std::string_view message_id, std::string_view consumer,
                        std::string_view owner, std::string_view expires,
                        const std::optional<std::string>& read_owner,
                        const std::optional<std::string>& read_expires) = 0;
  // Marks the claim completed, only while owner holds it; true when it did.
  virtual bool CompleteOwned(std::string_view message_id, std::string_view consumer,
                             std::string_view owner, TimePoint now) = 0;
  // Extends the lease to expires, only while owner holds the uncompleted claim.
  virtual bool Renew(std::string_view message_id, std::string_view consumer, std::string_view owner,
                     std::string_view expires) = 0;
};

// All of them, on one connection.
class KeyedStores : public ReservationStore,
                    public HashedInboxStore,
                    public ReceiptStore,
                    public LeaseStore {};

}  // namespace dedupsim
