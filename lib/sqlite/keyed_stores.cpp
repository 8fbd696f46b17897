#include "sqlite/keyed_stores.h"

#include <memory>

#include "core/timestamp.h"
#include "sqlite/statement.h"
#include "sqlite/store.h"

namespace dedupsim {

KeyedStores& SqliteStore::keyed() {
  if (!keyed_) keyed_ = std::make_shared<SqliteKeyedStores>(*db_);
  return *keyed_;
}

InsertResult SqliteKeyedStores::InsertReservation(std::string_view order_id,
                                                  std::string_view book_id, int64_t quantity,
                                                  TimePoint now) {
  return db_
      .Cached(
          "INSERT INTO StockReservations (OrderId, BookId, Quantity, ReservedAt) "
          "VALUES (?1, ?2, ?3, ?4)")
      .Bind(1, order_id)
      .Bind(2, book_id)
      .Bind(3, quantity)
      .Bind(4, FormatTimestamp(now))
      .ExecuteInsert();
}

void SqliteKeyedStores::UpsertReservation(std::string_view order_id, std::string_view book_id,
                                          int64_t quantity, TimePoint now) {
  db_.Cached(
         "INSERT INTO StockReservations (OrderId, BookId, Quantity, ReservedAt) "
         "VALUES (?1, ?2, ?3, ?4) ON CONFLICT (OrderId, BookId) DO UPDATE SET "
         "Quantity = excluded.Quantity")
      .Bind(1, order_id)
      .Bind(2, book_id)
      .Bind(3, quantity)
      .Bind(4, FormatTimestamp(now))
      .Execute();
}

void SqliteKeyedStores::SetReserved(std::string_view book_id, int64_t reserved) {
  db_.Cached("UPDATE StockItems SET Reserved = ?1 WHERE BookId = ?2")
      .Bind(1, reserved)
      .Bind(2, book_id)
      .Execute();
}

int64_t SqliteKeyedStores::ReservedByRows(std::string_view book_id) {
  Statement query =
      db_.Prepare("SELECT coalesce(sum(Quantity), 0) FROM StockReservations WHERE BookId = ?1");
  query.Bind(1, book_id);
  query.Step();
  return query.ColumnInt(0);
}

InsertResult SqliteKeyedStores::ClaimCompletedWithHash(std::string_view message_id,
                                                       std::string_view consumer,
                                                       std::string_view hash, TimePoint now) {
  return db_
      .Cached(
          "INSERT INTO Inbox (MessageId, Consumer, ReceivedAt, CompletedAt, PayloadHash) "
          "VALUES (?1, ?2, ?3, ?3, ?4)")
      .Bind(1, message_id)
      .Bind(2, consumer)
      .Bind(3, FormatTimestamp(now))
      .Bind(4, hash)
      .ExecuteInsert();
}

InsertResult SqliteKeyedStores::ClaimOrCountReceipt(std::string_view message_id,
                                                    std::string_view consumer, TimePoint now) {
  InsertResult claimed =
      SqliteStore(db_).ClaimCompleted(InboxKey::kMessageIdAndConsumer, message_id, consumer, now);
  if (claimed == InsertResult::kInserted) return claimed;
  // The failed INSERT undid only itself; the transaction is still open.
  db_.Cached(
         "UPDATE Inbox SET ReceiveCount = ReceiveCount + 1, LastReceivedAt = ?1 "
         "WHERE MessageId = ?2 AND Consumer = ?3")
      .Bind(1, FormatTimestamp(now))
      .Bind(2, message_id)
      .Bind(3, consumer)
      .Execute();
  return claimed;
}

InsertResult SqliteKeyedStores::ClaimLeased(std::string_view message_id, std::string_view consumer,
                                            std::string_view owner, TimePoint now,
                                            std::string_view expires) {
  return db_
      .Cached(
          "INSERT INTO Inbox (MessageId, Consumer, ReceivedAt, CompletedAt, Owner, "
          "LeaseExpiresAt) VALUES (?1, ?2, ?3, NULL, ?4, ?5)")
      .Bind(1, message_id)
      .Bind(2, consumer)
      .Bind(3, FormatTimestamp(now))
      .Bind(4, owner)
      .Bind(5, expires)
      .ExecuteInsert();
}

bool SqliteKeyedStores::TakeOver(std::string_view message_id, std::string_view consumer,
                                 std::string_view owner, std::string_view expires,
                                 const std::optional<std::string>& read_owner,
                                 const std::optional<std::string>& read_expires) {
  Statement& take = db_.Cached(
      "UPDATE Inbox SET Owner = ?1, LeaseExpiresAt = ?2 WHERE MessageId = ?3 AND "
      "Consumer = ?4 AND CompletedAt IS NULL AND Owner IS ?5 AND LeaseExpiresAt IS ?6");
  take.Bind(1, owner).Bind(2, expires).Bind(3, message_id).Bind(4, consumer);
  if (read_owner)
    take.Bind(5, *read_owner);
  else
    take.BindNull(5);
  if (read_expires)
    take.Bind(6, *read_expires);
  else
    take.BindNull(6);
  take.Execute();
  return db_.Changes() != 0;
}

bool SqliteKeyedStores::CompleteOwned(std::string_view message_id, std::string_view consumer,
                                      std::string_view owner, TimePoint now) {
  db_.Cached(
         "UPDATE Inbox SET CompletedAt = ?1 WHERE MessageId = ?2 AND Consumer = ?3 AND "
         "Owner = ?4 AND CompletedAt IS NULL")
      .Bind(1, FormatTimestamp(now))
      .Bind(2, message_id)
      .Bind(3, consumer)
      .Bind(4, owner)
      .Execute();
  return db_.Changes() != 0;
}

bool SqliteKeyedStores::Renew(std::string_view message_id, std::string_view consumer,
                              std::string_view owner, std::string_view expires) {
  db_.Cached(
         "UPDATE Inbox SET LeaseExpiresAt = ?1 WHERE MessageId = ?2 AND Consumer = ?3 AND "
         "Owner = ?4 AND CompletedAt IS NULL")
      .Bind(1, expires)
      .Bind(2, message_id)
      .Bind(3, consumer)
      .Bind(4, owner)
      .Execute();
  return db_.Changes() == 1;
}

}  // namespace dedupsim
