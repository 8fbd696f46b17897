#include "consumers/payload_checked.h"

#include "consumers/naive.h"
#include "schema.h"
#include "sqlite/statement.h"
#include "sqlite/transaction.h"

namespace dedupsim {

std::string_view ToString(PayloadCheck result) {
  switch (result) {
    case PayloadCheck::kProcessed:
      return "Processed";
    case PayloadCheck::kDuplicate:
      return "Duplicate";
    case PayloadCheck::kContentMismatch:
      return "ContentMismatch";
  }
  return "?";
}

PayloadCheckResult PayloadCheckedReserveStock::Handle(const OrderPlaced& m) {
  PayloadCheckResult out;
  out.hash = PayloadHash(m);
  Transaction tx(db_);
  std::string now = FormatTimestamp(clock_.Now());
  InsertResult claimed =
      db_.Cached("INSERT INTO Inbox (MessageId, Consumer, ReceivedAt, CompletedAt, PayloadHash) "
                 "VALUES (?1, ?2, ?3, ?3, ?4)")
          .Bind(1, m.message_id)
          .Bind(2, kName)
          .Bind(3, now)
          .Bind(4, out.hash)
          .ExecuteInsert();
  if (claimed == InsertResult::kDuplicateKey) {
    std::optional<InboxRow> row = FindInboxRow(db_, m.message_id, kName);
    tx.Rollback();
    out.stored_hash = row && row->payload_hash ? *row->payload_hash : "";
    // A row written without a hash (by another consumer version) cannot be compared: it
    // is taken as the same message, as the plain inbox would.
    bool same = out.stored_hash.empty() || out.stored_hash == out.hash;
    out.result = same ? PayloadCheck::kDuplicate : PayloadCheck::kContentMismatch;
    return out;
  }
  AddReserved(db_, m);
  RunHook(db_, "BeforeCommit", before_commit);
  tx.Commit();
  return out;
}

}  // namespace dedupsim
