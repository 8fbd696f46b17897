// The registry of consumers: every consumer dedupsim runs by name, declared once here
// with its name, summary, effect, partner, crash points, side store and one handler over
// the store seam. It is what the tree means by a consumer's name: the explorer's matrix
// (explore/strategies.h) is one row per entry, a scenario file's `builtin` looks the name
// up here, the bench and the soak run the entries that say so (BenchRole), and each
// example file (examples/consumers/<name>.toml) is held to its entry by one test
// (tests/registry_test.cpp, tests/files_equivalence_test.cpp).
//
// An entry holds no state; its handler builds the consumer of lib/consumers/ (the class
// the lesson of that name runs) on the store it is given and handles one delivery.
// Adding a consumer is adding an entry in registry.cpp and its example file.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/message.h"
#include "store/side_store.h"
#include "store/store.h"
#include "world/email_provider.h"

namespace dedupsim {

// What one delivery ended with, as the consumer reports it. All three are acked: a
// skipped duplicate is a success, and a case that needs reconciliation goes where a
// person looks (a dead-letter queue), flagged.
enum class DeliveryResult { kProcessed, kSkipped, kNeedsReconciliation };

std::string_view ToString(DeliveryResult result);  // "processed", "skipped", ...

// Whether the bench and the soak run the consumer on their workload (a stock consumer that
// needs the service's database alone, on either backend), and what it promises there:
// each order reserved exactly once through duplicates and racing instances (no crash), a
// promise the bench checks and exits 1 on when broken.
enum class BenchRole { kNotRun, kRun, kRunExactlyOnce };

// What a handler runs with. Every reference is valid for the call only.
struct ConsumerEnv {
  Store& store;           // the service's database, on either backend
  Clock& clock;
  EmailProvider* email;   // where an email consumer sends; null when none is given
  SideRecords* side;      // the side store (SideStoreKind), null when the entry has none
};

struct ConsumerEntry {
  std::string_view name;     // kebab-case, as the command line and the files spell it
  std::string_view summary;  // one line
  std::string_view effect;   // what the invariant counts: "stock" or "email"
  // The subscriber the second-subscriber fault runs next to this one, sharing its database
  // and Inbox (the post's Inventory and Notification): an entry with a different effect.
  std::string_view partner;
  // The named steps a first, clean delivery goes through, in order: a statement's label
  // ("UPDATE StockItems"), a hook's name, or "EmailProvider.Send". The explorer checks the
  // list against what a delivery really does, so it cannot drift from the handler.
  std::vector<std::string_view> crash_points;
  // SQL that empties the entry's own tables of the service's database (beyond Inbox and
  // StockItems) before each of the explorer's schedules; null: none.
  const char* reset = nullptr;
  SideStoreKind side = SideStoreKind::kNone;  // store/side_store.h
  BenchRole bench = BenchRole::kNotRun;
  // Handles one delivery. Throws what the consumer throws (StoreError when the database
  // refused); std::logic_error when the entry's side store or email provider is missing.
  DeliveryResult (*handle)(ConsumerEnv& env, const OrderPlaced& message) = nullptr;
};

// Every entry, in the order the explorer prints them.
std::span<const ConsumerEntry* const> AllConsumers();
// nullptr when no entry has that name.
const ConsumerEntry* FindConsumer(std::string_view name);
// "naive, check-then-process, ..." for error messages.
std::string ConsumerNames();

// What a side store's statements' trace events name as their target: "cache", "email
// provider" ("second file" for kNone). Its tables are the backend's that keeps it
// (lib/sqlite/side_records.h: SideStoreTables).
const char* SideStoreTarget(SideStoreKind side);

}  // namespace dedupsim
