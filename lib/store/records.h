// The rows of the simulated Inventory service as a consumer sees them, whatever database
// holds them: a stock item, an inbox row and what an inbox key is made of. Backend-neutral:
// lib/sqlite/ and lib/postgres/ each read and write them with their own SQL.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dedupsim {

// What an INSERT that may hit an existing key did: the duplicate key is a value, not an
// error (SQLite 1555/2067, PostgreSQL 23505).
enum class InsertResult { kInserted, kDuplicateKey };

struct StockItem {
  std::string book_id;
  std::string title;
  int64_t on_hand = 0;
  int64_t reserved = 0;
};

struct InboxRow {
  std::string message_id;
  std::string consumer;
  std::string received_at;
  std::optional<std::string> completed_at;      // empty: in progress
  std::optional<std::string> payload_hash;      // empty: not recorded
  int64_t receive_count = 1;                    // deliveries of the key (version 3)
  std::optional<std::string> owner;             // the claim's owner (version 3)
  std::optional<std::string> lease_expires_at;  // its lease (version 3)
};

// What an inbox row is keyed on. The post's key is (MessageId, Consumer), in Inbox; the
// shared-key experiment keys on MessageId alone, in InboxByMessageId.
enum class InboxKey { kMessageIdAndConsumer, kMessageIdOnly };

std::string_view ToString(InboxKey key);    // "(MessageId, Consumer)", "MessageId"
std::string_view InboxTable(InboxKey key);  // "Inbox", "InboxByMessageId"

}  // namespace dedupsim
