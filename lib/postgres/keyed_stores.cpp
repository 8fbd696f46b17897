#include "postgres/keyed_stores.h"

#include <memory>

#include "core/timestamp.h"
#include "postgres/store.h"

namespace dedupsim {

namespace {

std::string S(std::string_view s) { return std::string(s); }

}  // namespace

KeyedStores& PgStore::keyed() {
  if (!keyed_ || !keyed_->On(db_)) keyed_ = std::make_shared<PgKeyedStores>(db_);
  return *keyed_;
}

InsertResult PgKeyedStores::InsertUnderSavepoint(const char* name, std::string_view sql,
                                                 const PgParams& params) {
  const bool in_transaction = db_.InTransaction();
  if (in_transaction) db_.Exec(std::string("SAVEPOINT ") + name);
  InsertResult result = db_.ExecInsert(sql, params, "Inbox");
  if (in_transaction && result == InsertResult::kDuplicateKey) {
    db_.Exec(std::string("ROLLBACK TO SAVEPOINT ") + name);  // clears 25P02
  }
  return result;
}

InsertResult PgKeyedStores::InsertReservation(std::string_view order_id, std::string_view book_id,
                                              int64_t quantity, TimePoint now) {
  return db_.ExecInsert(
      "INSERT INTO StockReservations (OrderId, BookId, Quantity, ReservedAt) "
      "VALUES ($1, $2, $3, $4)",
      {S(order_id), S(book_id), std::to_string(quantity), FormatTimestamp(now)},
      "StockReservations");
}

void PgKeyedStores::UpsertReservation(std::string_view order_id, std::string_view book_id,
                                      int64_t quantity, TimePoint now) {
  db_.Exec(
      "INSERT INTO StockReservations (OrderId, BookId, Quantity, ReservedAt) "
      "VALUES ($1, $2, $3, $4) ON CONFLICT (OrderId, BookId) DO UPDATE SET "
      "Quantity = excluded.Quantity",
      {S(order_id), S(book_id), std::to_string(quantity), FormatTimestamp(now)},
      "StockReservations");
}

void PgKeyedStores::SetReserved(std::string_view book_id, int64_t reserved) {
  db_.Exec("UPDATE StockItems SET Reserved = $1 WHERE BookId = $2",
           {std::to_string(reserved), S(book_id)}, "StockItems");
}

int64_t PgKeyedStores::ReservedByRows(std::string_view book_id) {
  return db_
      .Exec("SELECT coalesce(sum(Quantity), 0) FROM StockReservations WHERE BookId = $1",
            {S(book_id)})
      .Int(0, 0);
}

InsertResult PgKeyedStores::ClaimCompletedWithHash(std::string_view message_id,
                                                   std::string_view consumer, std::string_view hash,
                                                   TimePoint now) {
  const std::string stamp = FormatTimestamp(now);
  return InsertUnderSavepoint(
      "claim",
      "INSERT INTO Inbox (MessageId, Consumer, ReceivedAt, CompletedAt, PayloadHash) "
      "VALUES ($1, $2, $3, $3, $4)",
      {S(message_id), S(consumer), stamp, S(hash)});
}

InsertResult PgKeyedStores::ClaimOrCountReceipt(std::string_view message_id,
                                                std::string_view consumer, TimePoint now) {
  const std::string stamp = FormatTimestamp(now);
  InsertResult claimed =
      InsertUnderSavepoint("claim",
                           "INSERT INTO Inbox (MessageId, Consumer, ReceivedAt, CompletedAt) "
                           "VALUES ($1, $2, $3, $4)",
                           {S(message_id), S(consumer), stamp, stamp});
  if (claimed == InsertResult::kInserted) return claimed;
  db_.Exec(
      "UPDATE Inbox SET ReceiveCount = ReceiveCount + 1, LastReceivedAt = $1 "
      "WHERE MessageId = $2 AND Consumer = $3",
      {stamp, S(message_id), S(consumer)}, "Inbox");
  return claimed;
}

InsertResult PgKeyedStores::ClaimLeased(std::string_view message_id, std::string_view consumer,
                                        std::string_view owner, TimePoint now,
                                        std::string_view expires) {
  return db_.ExecInsert(
      "INSERT INTO Inbox (MessageId, Consumer, ReceivedAt, CompletedAt, Owner, "
      "LeaseExpiresAt) VALUES ($1, $2, $3, NULL, $4, $5)",
      {S(message_id), S(consumer), FormatTimestamp(now), S(owner), S(expires)}, "Inbox");
}

bool PgKeyedStores::TakeOver(std::string_view message_id, std::string_view consumer,
                             std::string_view owner, std::string_view expires,
                             const std::optional<std::string>& read_owner,
                             const std::optional<std::string>& read_expires) {
  return db_.Exec(
                "UPDATE Inbox SET Owner = $1, LeaseExpiresAt = $2 WHERE MessageId = $3 AND "
                "Consumer = $4 AND CompletedAt IS NULL AND Owner IS NOT DISTINCT FROM $5 "
                "AND LeaseExpiresAt IS NOT DISTINCT FROM $6",
                {S(owner), S(expires), S(message_id), S(consumer), read_owner, read_expires},
                "Inbox")
             .affected() != 0;
}

bool PgKeyedStores::CompleteOwned(std::string_view message_id, std::string_view consumer,
                                  std::string_view owner, TimePoint now) {
  return db_.Exec(
                "UPDATE Inbox SET CompletedAt = $1 WHERE MessageId = $2 AND Consumer = $3 AND "
                "Owner = $4 AND CompletedAt IS NULL",
                {FormatTimestamp(now), S(message_id), S(consumer), S(owner)}, "Inbox")
             .affected() != 0;
}

bool PgKeyedStores::Renew(std::string_view message_id, std::string_view consumer,
                          std::string_view owner, std::string_view expires) {
  return db_.Exec(
                "UPDATE Inbox SET LeaseExpiresAt = $1 WHERE MessageId = $2 AND Consumer = $3 "
                "AND Owner = $4 AND CompletedAt IS NULL",
                {S(expires), S(message_id), S(consumer), S(owner)}, "Inbox")
             .affected() == 1;
}

}  // namespace dedupsim
