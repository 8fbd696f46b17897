// A strategy is one row of the explorer's matrix: a small adapter around a consumer. It
// says how to set up the tables the consumer needs, how to handle one delivery on a store
// (either backend), which named steps a delivery goes through (the crash points), and how
// to read back how many times the consumer's effect happened for an order.
//
// An adapter holds no state: the explorer calls it from one instance's thread at a time,
// on that instance's store, whose every statement and hook is a scheduled step. It names
// no backend: the instance's store is SQLite's or PostgreSQL's (store/store.h).
// The table of rows is in strategies.cpp, one per entry of the registry of consumers
// (consumers/registry.h); a consumer file (lib/files/) makes a row of its own.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "consumers/email.h"
#include "consumers/registry.h"
#include "core/clock.h"
#include "core/message.h"
#include "store/explore_database.h"
#include "store/store.h"

namespace dedupsim::explore {

// What one delivery ended with: the registry's word (consumers/registry.h), one type for
// the consumers, the explorer and the files.
using ::dedupsim::DeliveryResult;
using ::dedupsim::ToString;

// What a delivery runs with, on either backend. Every reference is valid for the call only.
struct StoreContext {
  Store& store;  // this instance's store: over its SQLite connection, or its PostgreSQL one
  // The second file's records (store/side_store.h) on a scheduled connection of this
  // instance's (Strategy::side), or null: the registry's side store
  // (ConsumerEnv::side), which the handler hands on without reading it here.
  SideRecords* side;
  Clock& clock;          // a ManualClock: the same timestamps in every schedule
  EmailProvider& email;  // counts sends; each send is a scheduled step (a crash point)
  // Hands a message the consumer publishes to the broker (a consumer file's publish step,
  // already a scheduled step); the explorer counts them per order. May be empty.
  std::function<void(const std::string& topic, const OrderPlaced& message)> publish = {};
};

// One logical order: what the invariants count "exactly once" against. Each order has its
// own book, so the stock reserved for it can be read back on its own.
struct LogicalOrder {
  std::string order_id;
  std::string book_id;
  int64_t quantity = 0;
};

// Reads the state a schedule left, after every instance finished.
class EffectProbe {
 public:
  virtual ~EffectProbe() = default;
  // How many times the order's quantity was reserved by the subscriber being measured,
  // read on whichever backend the schedule ran on: what each book's Reserved moved by since
  // the plan started, shared out among the orders (and stock subscribers) of that book.
  // kNotWhole when it cannot be: the book moved by an amount no whole number of
  // reservations adds up to.
  virtual int64_t ReservedTimes(const LogicalOrder& order) = 0;
  // Emails the idempotent provider (in the second file) sent for the order: 0 without one.
  virtual int64_t ProviderEmailsSentFor(const LogicalOrder& order) = 0;
  // Emails the provider accepted for any message of this order, sent by the subscriber
  // being measured.
  virtual int64_t EmailsSentFor(const LogicalOrder& order) = 0;
  // Messages the subscriber being measured published (StoreContext::publish) for any
  // message of this order.
  virtual int64_t PublishedFor(const LogicalOrder& order) = 0;
};

struct Strategy {
  std::string_view name;     // kebab-case, used on the command line
  std::string_view summary;  // one line
  std::string_view effect;   // what the invariant counts: "stock" or "email"
  // The subscriber the second-subscriber fault runs next to this one, sharing its
  // database and Inbox (the post's Inventory and Notification). It must be a row of the
  // table with a different effect.
  std::string_view partner;
  // The named steps a first, clean delivery goes through, in order: a statement's label
  // (StepLabel: "UPDATE StockItems"), a hook's name, or "EmailProvider.Send". A crash at a
  // point kills the instance just before that step would run. The explorer checks this
  // list against what a delivery really does, so it cannot drift from the code.
  std::vector<std::string_view> crash_points;
  // The row's tables, as the explorer's database makes and empties them
  // (store/explore_database.h). When they keep a second file, StoreContext::side is a
  // scheduled connection to it, and the row runs on SQLite only (RunsOnPostgres).
  ExploreTables tables;
  // What the second file is, as its statements' trace events name their target ("cache",
  // "email provider"): the views draw it apart from the database, and the deliveries view
  // keeps its transactions apart from the database's.
  const char* aux_target = "second file";
  // Handles one delivery: the row's one handler, on the instance's store of either
  // backend. Throws what the consumer throws: SimulatedCrash from a crash point (the
  // explorer's doing), StoreError when the database refused, DeliveryFailed when the
  // consumer gave up on its own (both: not acked, redelivered). A function object so that a
  // consumer read from a file (lib/files/) can carry its steps.
  std::function<DeliveryResult(StoreContext& context, const OrderPlaced& message)> handle;
  // How many times the effect happened for the order (0, 1, 2 ...).
  int64_t (*applied)(EffectProbe& probe, const LogicalOrder& order) = nullptr;

  // Whether the row runs on PostgreSQL: every row but those that keep a second file (a
  // side store, a SQLite file the explorer keeps on SQLite only).
  bool RunsOnPostgres() const { return !KeepsSecondFile(); }
  // The row keeps a second file: a side store, or a test's own tables.
  bool KeepsSecondFile() const { return tables.KeepsSecondFile(); }
};

// Thrown by a consumer that gives up on a delivery without a database error (a consumer
// file's `throw` action): the message is not acked, and the broker redelivers it.
class DeliveryFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The effect readers shared by the adapters of the post's consumers.
int64_t StockApplied(EffectProbe& probe, const LogicalOrder& order);  // ReservedTimes
int64_t EmailApplied(EffectProbe& probe, const LogicalOrder& order);  // emails sent
// Emails the idempotent provider (in the second file) sent for the order.
int64_t ProviderEmailsApplied(EffectProbe& probe, const LogicalOrder& order);
// Two effects that must each happen exactly once (the stock or the email, and what the
// consumer publishes), as one count for the invariant: more than once if either happened
// more than once (the larger count), else the smaller (0: one of them was lost).
int64_t EveryEffectOnce(int64_t effect, int64_t published);

}  // namespace dedupsim::explore
