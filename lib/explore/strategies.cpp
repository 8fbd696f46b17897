// The adapters: each row wraps one consumer of lib/consumers/, the same class the lesson of
// that name runs (one registry of consumers for the scenarios, bench, soak and explorer),
// so breaking a lesson's consumer changes its row of the matrix. The cache rows
// and email-reconcile keep their second store (the cache, the provider) in the explorer's
// second file, DeliveryContext::aux.
#include "explore/strategies.h"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "consumers/cache_dedup.h"
#include "consumers/check_then_process.h"
#include "consumers/claim_last.h"
#include "consumers/email.h"
#include "consumers/email_reconcile.h"
#include "consumers/idempotent.h"
#include "consumers/keyed.h"
#include "consumers/naive.h"
#include "consumers/natural_key.h"
#include "consumers/optimistic_email.h"
#include "consumers/record_first.h"
#include "sqlite/schema.h"
#include "sqlite/statement.h"
#include "sqlite/store.h"
#include "world/dedup_cache.h"
#include "world/email_provider.h"

namespace dedupsim::explore {

std::string_view ToString(DeliveryResult result) {
  switch (result) {
    case DeliveryResult::kProcessed:
      return "processed";
    case DeliveryResult::kSkipped:
      return "skipped";
    case DeliveryResult::kNeedsReconciliation:
      return "needs reconciliation";
  }
  return "?";
}

int64_t StockApplied(EffectProbe& probe, const LogicalOrder& order) {
  return probe.ReservedTimes(order);
}

int64_t EmailApplied(EffectProbe& probe, const LogicalOrder& order) {
  return probe.EmailsSentFor(order);
}

// The provider of email-reconcile, which honours an idempotency key, keeps its records in
// the explorer's second file; its statements are scheduled steps like the consumer's.
const char* const kProviderSchema = R"sql(
    CREATE TABLE IF NOT EXISTS SentEmails (
      IdempotencyKey TEXT NOT NULL PRIMARY KEY,
      Text           TEXT NOT NULL,
      SentAt         TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS ProviderRequests (
      Id             INTEGER PRIMARY KEY,
      IdempotencyKey TEXT NOT NULL,
      Result         TEXT NOT NULL,
      At             TEXT NOT NULL
    );
)sql";

int64_t ProviderEmailsApplied(EffectProbe& probe, const LogicalOrder& order) {
  Connection* aux = probe.aux();
  if (aux == nullptr) return 0;
  Statement query = aux->Prepare("SELECT count(*) FROM SentEmails WHERE Text = ?1");
  query.Bind(1, StockReservedText(OrderPlaced{"", order.order_id, order.book_id, order.quantity}));
  query.Step();
  return query.ColumnInt(0);
}

int64_t EveryEffectOnce(int64_t effect, int64_t published) {
  if (effect > 1 || published > 1) return std::max(effect, published);
  return std::min(effect, published);
}

const char* const kProviderReset = "DELETE FROM SentEmails; DELETE FROM ProviderRequests;";

namespace {

DeliveryResult Processed(bool did_work) {
  return did_work ? DeliveryResult::kProcessed : DeliveryResult::kSkipped;
}

// A row's one handler, written over the store (either backend). The explorer's SQLite
// instances hold a connection: `handle` runs the same handler on a store over it, so
// both paths issue the same statements and pass the same hooks.
template <DeliveryResult (*OnStore)(StoreContext&, const OrderPlaced&)>
DeliveryResult OverConnection(DeliveryContext& c, const OrderPlaced& m) {
  SqliteStore store(c.db);
  StoreContext context{store, c.clock, c.email};
  return OnStore(context, m);
}

DeliveryResult FromEmailOutcome(EmailOutcome outcome) {
  switch (outcome) {
    case EmailOutcome::kSent:
      return DeliveryResult::kProcessed;
    case EmailOutcome::kAlreadySent:
      return DeliveryResult::kSkipped;
    case EmailOutcome::kNeedsReconciliation:
      break;
  }
  return DeliveryResult::kNeedsReconciliation;
}

DeliveryResult NaiveOnStore(StoreContext& c, const OrderPlaced& m) {
  NaiveReserveStock(c.store).Handle(m);
  return DeliveryResult::kProcessed;
}

const Strategy kNaive{
    .name = "naive",
    .summary = "adds the quantity on every delivery, no record",
    .effect = "stock",
    .partner = "email",
    .crash_points = {"UPDATE StockItems"},
    .handle = &OverConnection<&NaiveOnStore>,
    .handle_store = &NaiveOnStore,
    .applied = &StockApplied,
};

DeliveryResult CheckThenProcessOnStore(StoreContext& c, const OrderPlaced& m) {
  return Processed(CheckThenProcessReserveStock(c.store, c.clock).Handle(m));
}

const Strategy kCheckThenProcess{
    .name = "check-then-process",
    .summary = "looks in the Inbox, reserves (own commit), then records (own commit)",
    .effect = "stock",
    .partner = "email",
    .crash_points = {"SELECT Inbox", "UPDATE StockItems", "AfterStockCommitted", "INSERT Inbox"},
    .handle = &OverConnection<&CheckThenProcessOnStore>,
    .handle_store = &CheckThenProcessOnStore,
    .applied = &StockApplied,
};

DeliveryResult InboxOnStore(StoreContext& c, const OrderPlaced& m) {
  return Processed(IdempotentReserveStock(c.store, c.clock).Handle(m));
}

const Strategy kInbox{
    .name = "inbox",
    .summary = "claims the key, reserves and commits both in one transaction",
    .effect = "stock",
    .partner = "email",
    .crash_points = {"BEGIN", "INSERT Inbox", "UPDATE StockItems", "BeforeCommit", "COMMIT"},
    .handle = &OverConnection<&InboxOnStore>,
    .handle_store = &InboxOnStore,
    .applied = &StockApplied,
};

DeliveryResult EmailOnStore(StoreContext& c, const OrderPlaced& m) {
  return FromEmailOutcome(SendStockReservedEmail(c.store, c.email, c.clock).Handle(m));
}

const Strategy kEmail{
    .name = "email",
    .summary = "two-phase record around an email: in progress, send, completed",
    .effect = "email",
    .partner = "inbox",
    .crash_points = {"SELECT Inbox", "INSERT Inbox", "EmailProvider.Send", "AfterSend",
                     "UPDATE Inbox"},
    .handle = &OverConnection<&EmailOnStore>,
    .handle_store = &EmailOnStore,
    .applied = &EmailApplied,
};

// optimistic-email: no claim ahead of the send; the completed row's key decides at commit.
DeliveryResult OptimisticEmailOnStore(StoreContext& c, const OrderPlaced& m) {
  return FromEmailOutcome(
      OptimisticEmailSender(c.store, c.email, c.clock).Handle(m).outcome);
}

const Strategy kOptimisticEmail{
    .name = "optimistic-email",
    .summary = "the email sent inside the transaction; the Inbox row's key decides at commit",
    .effect = "email",
    .partner = "inbox",
    .crash_points = {"SELECT Inbox", "BEGIN", "EmailProvider.Send", "AfterSend", "INSERT Inbox",
                     "BeforeCommit", "COMMIT"},
    .handle = &OverConnection<&OptimisticEmailOnStore>,
    .handle_store = &OptimisticEmailOnStore,
    .applied = &EmailApplied,
};

// correlation-key: the inbox transaction keyed on the order's id (the correlation id). The
// matrix shows its upside (a producer's resend of the order is caught); its downside, a
// different message about the same order dropped, needs the scenario's OrderCancelled.
DeliveryResult CorrelationKeyOnStore(StoreContext& c, const OrderPlaced& m) {
  return Processed(
      KeyedReserveStock(c.store, c.clock).Handle({OrderEventType::kPlaced, m}, m.order_id));
}

const Strategy kCorrelationKey{
    .name = "correlation-key",
    .summary = "the inbox transaction, its key the OrderId (the correlation id)",
    .effect = "stock",
    .partner = "email",
    .crash_points = {"BEGIN", "INSERT Inbox", "UPDATE StockItems", "COMMIT"},
    .handle = &OverConnection<&CorrelationKeyOnStore>,
    .handle_store = &CorrelationKeyOnStore,
    .applied = &StockApplied,
};

DeliveryResult RecordFirstOnStore(StoreContext& c, const OrderPlaced& m) {
  return Processed(dedupsim::RecordFirstReserveStock(c.store, c.clock).Handle(m));
}

const Strategy kRecordFirst{
    .name = "record-first",
    .summary = "records the key (own commit), then reserves (own commit)",
    .effect = "stock",
    .partner = "email",
    .crash_points = {"SELECT Inbox", "INSERT Inbox", "AfterRecordCommitted", "UPDATE StockItems"},
    .handle = &OverConnection<&RecordFirstOnStore>,
    .handle_store = &RecordFirstOnStore,
    .applied = &StockApplied,
};

DeliveryResult ClaimLastOnStore(StoreContext& c, const OrderPlaced& m) {
  return Processed(dedupsim::ClaimLastReserveStock(c.store, c.clock).Handle(m).processed);
}

const Strategy kClaimLast{
    .name = "claim-last",
    .summary = "one transaction, but the Inbox row is written after the stock update",
    .effect = "stock",
    .partner = "email",
    // The lesson's consumer reads Reserved back inside its transaction (SELECT StockItems)
    // to report what the second copy saw: a step, and a crash point, like any other.
    .crash_points = {"BEGIN", "UPDATE StockItems", "SELECT StockItems", "INSERT Inbox",
                     "BeforeCommit", "COMMIT"},
    .handle = &OverConnection<&ClaimLastOnStore>,
    .handle_store = &ClaimLastOnStore,
    .applied = &StockApplied,
};

DeliveryResult NaturalKeyOnStore(StoreContext& c, const OrderPlaced& m) {
  return Processed(NaturalKeyReserveStock(c.store, c.clock).Handle(m));
}

const Strategy kNaturalKey{
    .name = "natural-key",
    .summary = "no inbox: the reservation row keyed on (OrderId, BookId), in one transaction",
    .effect = "stock",
    .partner = "email",
    .crash_points = {"BEGIN", "INSERT StockReservations", "UPDATE StockItems", "BeforeCommit",
                     "COMMIT"},
    .reset = "DELETE FROM StockReservations;",
    .handle = &OverConnection<&NaturalKeyOnStore>,
    .handle_store = &NaturalKeyOnStore,
    .applied = &StockApplied,
};

DeliveryResult SharedKeyOnStore(StoreContext& c, const OrderPlaced& m) {
  IdempotentReserveStock consumer(c.store, c.clock);
  consumer.inbox_key = InboxKey::kMessageIdOnly;
  return Processed(consumer.Handle(m));
}

const Strategy kSharedKey{
    .name = "shared-key",
    .summary = "the inbox transaction, but the Inbox keyed on MessageId alone",
    .effect = "stock",
    .partner = "shared-key-email",
    .crash_points = {"BEGIN", "INSERT InboxByMessageId", "UPDATE StockItems", "BeforeCommit",
                     "COMMIT"},
    .reset = "DELETE FROM InboxByMessageId;",
    .handle = &OverConnection<&SharedKeyOnStore>,
    .handle_store = &SharedKeyOnStore,
    .applied = &StockApplied,
};

// shared-key's partner: the email consumer, its two-phase record in the same MessageId-keyed
// table, so the two subscribers of one message compete for one row.
DeliveryResult SharedKeyEmailOnStore(StoreContext& c, const OrderPlaced& m) {
  SendStockReservedEmail consumer(c.store, c.email, c.clock);
  consumer.inbox_key = InboxKey::kMessageIdOnly;
  return FromEmailOutcome(consumer.Handle(m));
}

const Strategy kSharedKeyEmail{
    .name = "shared-key-email",
    .summary = "the email consumer, its record in the Inbox keyed on MessageId alone",
    .effect = "email",
    .partner = "shared-key",
    .crash_points = {"SELECT InboxByMessageId", "INSERT InboxByMessageId", "EmailProvider.Send",
                     "AfterSend", "UPDATE InboxByMessageId"},
    .reset = "DELETE FROM InboxByMessageId;",
    .handle = &OverConnection<&SharedKeyEmailOnStore>,
    .handle_store = &SharedKeyEmailOnStore,
    .applied = &EmailApplied,
};

}  // namespace

// The dedup cache of cache-arbiter, in the explorer's second file.
const char* const kCacheSchema =
    "CREATE TABLE IF NOT EXISTS CacheKeys (Key TEXT NOT NULL PRIMARY KEY, SetAt TEXT NOT NULL) "
    "WITHOUT ROWID;";
const char* const kCacheReset = "DELETE FROM CacheKeys;";

namespace {

DeliveryResult HandleWithCache(DeliveryContext& c, const OrderPlaced& m, CacheWrite write) {
  if (c.aux == nullptr) throw std::logic_error("a cache strategy ran without its second file");
  DedupCache cache(*c.aux, c.clock);
  SqliteStore store(c.db);
  return Processed(CacheDedupReserveStock(store, cache, write).Handle(m));
}

const Strategy kCacheCheckThenSet{
    .name = "cache-check-then-set",
    .summary = "the key in a separate cache file: look, reserve (committed), then set",
    .effect = "stock",
    .partner = "email",
    .crash_points = {"SELECT CacheKeys", "AfterCacheCheck", "UPDATE StockItems",
                     "AfterStockCommitted", "INSERT CacheKeys"},
    .aux_schema = kCacheSchema,
    .aux_reset = kCacheReset,
    .aux_target = "cache",
    .handle = [](DeliveryContext& c, const OrderPlaced& m) {
      return HandleWithCache(c, m, CacheWrite::kCheckThenSet);
    },
    .applied = &StockApplied,
};

const Strategy kCacheSetIfAbsent{
    .name = "cache-set-if-absent",
    .summary = "the key in a separate cache file: set if absent (SET NX), then reserve",
    .effect = "stock",
    .partner = "email",
    .crash_points = {"INSERT CacheKeys", "AfterCacheCheck", "UPDATE StockItems",
                     "AfterStockCommitted"},
    .aux_schema = kCacheSchema,
    .aux_reset = kCacheReset,
    .aux_target = "cache",
    .handle = [](DeliveryContext& c, const OrderPlaced& m) {
      return HandleWithCache(c, m, CacheWrite::kSetIfAbsent);
    },
    .applied = &StockApplied,
};

const Strategy kEmailReconcile{
    .name = "email-reconcile",
    .summary = "the email consumer; a record left in progress is settled with the provider by key",
    .effect = "email",
    .partner = "inbox",
    .crash_points = {"SELECT Inbox", "INSERT Inbox", "BeforeSend", "BEGIN IMMEDIATE",
                     "INSERT SentEmails", "INSERT ProviderRequests", "COMMIT", "AfterSend",
                     "UPDATE Inbox"},
    .aux_schema = kProviderSchema,
    .aux_reset = kProviderReset,
    .aux_target = "email provider",
    .handle = [](DeliveryContext& c, const OrderPlaced& m) {
      if (c.aux == nullptr) throw std::logic_error("email-reconcile ran without its second file");
      IdempotentEmailProvider provider(*c.aux, c.clock);
      SqliteStore store(c.db);
      return FromEmailOutcome(ReconcilingEmailSender(store, provider, c.clock).Handle(m).outcome);
    },
    .applied = &ProviderEmailsApplied,
};

// The post's order: the naive consumer, the check and its reversal, the inbox and its
// reordering, then the side effect outside the transaction; then the later lessons: the
// natural key, the shared key, the dedup cache, the reconciling email.
// Then the lessons from the field: the email under optimistic concurrency, the correlation
// id as the key.
// clang-format off
constexpr std::array<const Strategy*, 14> kStrategies{
    &kNaive,          &kCheckThenProcess,  &kRecordFirst,      &kInbox,
    &kClaimLast,      &kEmail,             &kNaturalKey,       &kSharedKey,
    &kSharedKeyEmail, &kCacheCheckThenSet, &kCacheSetIfAbsent, &kEmailReconcile,
    &kOptimisticEmail, &kCorrelationKey};
// clang-format on

}  // namespace

std::span<const Strategy* const> AllStrategies() { return kStrategies; }

const Strategy* FindStrategy(std::string_view name) {
  for (const Strategy* s : kStrategies) {
    if (s->name == name) return s;
  }
  return nullptr;
}

std::string StrategyNames() {
  std::string names;
  for (const Strategy* s : kStrategies) {
    if (!names.empty()) names += ", ";
    names += s->name;
  }
  return names;
}

}  // namespace dedupsim::explore
