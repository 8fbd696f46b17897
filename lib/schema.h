// The tables of the simulated Inventory service, as in the post: StockItems and the Inbox
// keyed on (MessageId, Consumer), and the queries the scenarios read their figures with.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sqlite/connection.h"

namespace dedupsim {

inline constexpr int kSchemaVersion = 1;

// Creates the tables if missing and stamps user_version. Call inside set-up only.
void CreateSchema(Connection& connection);

struct StockItem {
  std::string book_id;
  std::string title;
  int64_t on_hand = 0;
  int64_t reserved = 0;
};

// Empties Inbox and StockItems and stocks one book, in one IMMEDIATE transaction.
void ResetInventory(Connection& connection, const StockItem& item);

// The stock row of book_id; throws DatabaseError when there is none.
StockItem ReadStock(Connection& connection, std::string_view book_id);

struct InboxRow {
  std::string message_id;
  std::string consumer;
  std::string received_at;
  std::optional<std::string> completed_at;  // empty: in progress
};

std::optional<InboxRow> FindInboxRow(Connection& connection, std::string_view message_id,
                                     std::string_view consumer);
int64_t CountInboxRows(Connection& connection);

}  // namespace dedupsim
