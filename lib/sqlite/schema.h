// The tables of the simulated Inventory service, as in the post: StockItems and the Inbox
// keyed on (MessageId, Consumer), plus the tables the lessons beyond the post need, and
// the queries the scenarios read their figures with.
//
// Schema versions (PRAGMA user_version):
//   1  StockItems, Inbox.
//   2  Inbox.PayloadHash (content-mismatch); StockReservations (natural-key);
//      InboxByMessageId, the inbox of the shared-key experiment, keyed on MessageId alone.
//   3  Inbox.ReceiveCount and Inbox.LastReceivedAt (receive-count: deliveries of a key
//      counted in the transaction that skips them), Inbox.Owner and Inbox.LeaseExpiresAt
//      (orphan-claim: a claim's owner and its lease); Outbox (the transactional outbox)
//      and ShipmentRequests (the outbox's downstream consumer's work); AuditLog (written
//      through a second connection, second-connection).
// UpgradeSchema brings an older dedupsim database up to kSchemaVersion in place.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sqlite/connection.h"
#include "store/records.h"

namespace dedupsim {

inline constexpr int kSchemaVersion = 3;

// Creates every table on a database dedupsim has just created. Same as UpgradeSchema.
void CreateSchema(Connection& connection);

// Brings a dedupsim database of any earlier schema version to kSchemaVersion, in one
// IMMEDIATE transaction: creates missing tables, adds the columns later versions added,
// stamps user_version. Does nothing on a current database. Throws DatabaseError for a
// database made by a newer dedupsim (a higher user_version), leaving it untouched.
void UpgradeSchema(Connection& connection);

// How the tables of a database of the current version differ from the ones CreateSchema
// makes (a column, a WITHOUT ROWID or STRICT flag, an index, a trigger someone added);
// nullopt when they are the same. Tables of other names are not looked at.
std::optional<std::string> SchemaDifference(Connection& connection);

// PRAGMA user_version of the database.
int SchemaVersion(Connection& connection);

// Empties the Inbox tables, StockReservations, Outbox, ShipmentRequests, AuditLog
// and StockItems and stocks one book, in one IMMEDIATE transaction. Returns the tables that
// held rows (the others are left alone), in the schema's order.
std::vector<std::string> ResetInventory(Connection& connection, const StockItem& item);

// The stock row of book_id; throws DatabaseError when there is none.
StockItem ReadStock(Connection& connection, std::string_view book_id);

std::optional<InboxRow> FindInboxRow(Connection& connection, std::string_view message_id,
                                     std::string_view consumer);

// The row the key finds for this message and consumer. With kMessageIdOnly the consumer
// plays no part: the row found may be another consumer's.
std::optional<InboxRow> FindInboxRow(Connection& connection, InboxKey key,
                                     std::string_view message_id, std::string_view consumer);
int64_t CountInboxRows(Connection& connection);

// Rows in a table of this schema (a fixed name: "Inbox", "StockReservations", ...).
int64_t CountRows(Connection& connection, std::string_view table);

}  // namespace dedupsim
