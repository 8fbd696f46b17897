// The entries: each wraps one consumer of lib/consumers/, the same class the lesson of that
// name runs, so breaking a lesson's consumer changes its row of the matrix, its bench row
// and its soak. Order: the post's (the naive consumer, the check and its reversal, the
// inbox and its reordering, then the side effect outside the transaction); then the later
// lessons (the natural key, the shared key, the dedup cache, the reconciling email); then
// the lessons from the field (the email under optimistic concurrency, the correlation id
// as the key).
#include "consumers/registry.h"

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
#include "world/dedup_cache.h"

namespace dedupsim {

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

const char* SideStoreTarget(SideStoreKind side) {
  switch (side) {
    case SideStoreKind::kNone:
      break;
    case SideStoreKind::kCache:
      return "cache";
    case SideStoreKind::kEmailProvider:
      return "email provider";
  }
  return "second file";
}

namespace {

DeliveryResult Processed(bool did_work) {
  return did_work ? DeliveryResult::kProcessed : DeliveryResult::kSkipped;
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

EmailProvider& Email(const ConsumerEnv& e, std::string_view name) {
  if (e.email == nullptr) {
    throw std::logic_error(std::string(name) + " ran without an email provider");
  }
  return *e.email;
}

SideRecords& Side(const ConsumerEnv& e, std::string_view name) {
  if (e.side == nullptr) throw std::logic_error(std::string(name) + " ran without its side store");
  return *e.side;
}

const ConsumerEntry kNaive{
    .name = "naive",
    .summary = "adds the quantity on every delivery, no record",
    .effect = "stock",
    .partner = "email",
    .crash_points = {"UPDATE StockItems"},
    .bench = BenchRole::kRun,
    .handle = [](ConsumerEnv& e, const OrderPlaced& m) {
      NaiveReserveStock(e.store).Handle(m);
      return DeliveryResult::kProcessed;
    },
};

const ConsumerEntry kCheckThenProcess{
    .name = "check-then-process",
    .summary = "looks in the Inbox, reserves (own commit), then records (own commit)",
    .effect = "stock",
    .partner = "email",
    .crash_points = {"SELECT Inbox", "UPDATE StockItems", "AfterStockCommitted", "INSERT Inbox"},
    .bench = BenchRole::kRun,
    .handle = [](ConsumerEnv& e, const OrderPlaced& m) {
      return Processed(CheckThenProcessReserveStock(e.store, e.clock).Handle(m));
    },
};

const ConsumerEntry kInbox{
    .name = "inbox",
    .summary = "claims the key, reserves and commits both in one transaction",
    .effect = "stock",
    .partner = "email",
    .crash_points = {"BEGIN", "INSERT Inbox", "UPDATE StockItems", "BeforeCommit", "COMMIT"},
    .bench = BenchRole::kRunExactlyOnce,
    .handle = [](ConsumerEnv& e, const OrderPlaced& m) {
      return Processed(IdempotentReserveStock(e.store, e.clock).Handle(m));
    },
};

const ConsumerEntry kEmail{
    .name = "email",
    .summary = "two-phase record around an email: in progress, send, completed",
    .effect = "email",
    .partner = "inbox",
    .crash_points = {"SELECT Inbox", "INSERT Inbox", "EmailProvider.Send", "AfterSend",
                     "UPDATE Inbox"},
    .handle = [](ConsumerEnv& e, const OrderPlaced& m) {
      return FromEmailOutcome(
          SendStockReservedEmail(e.store, Email(e, "email"), e.clock).Handle(m));
    },
};

// No claim ahead of the send; the completed row's key decides at commit.
const ConsumerEntry kOptimisticEmail{
    .name = "optimistic-email",
    .summary = "the email sent inside the transaction; the Inbox row's key decides at commit",
    .effect = "email",
    .partner = "inbox",
    .crash_points = {"SELECT Inbox", "BEGIN", "EmailProvider.Send", "AfterSend", "INSERT Inbox",
                     "BeforeCommit", "COMMIT"},
    .handle = [](ConsumerEnv& e, const OrderPlaced& m) {
      return FromEmailOutcome(
          OptimisticEmailSender(e.store, Email(e, "optimistic-email"), e.clock).Handle(m).outcome);
    },
};

// The inbox transaction keyed on the order's id (the correlation id). The matrix shows its
// upside (a producer's resend of the order is caught); its downside, a different message
// about the same order dropped, needs the scenario's OrderCancelled.
const ConsumerEntry kCorrelationKey{
    .name = "correlation-key",
    .summary = "the inbox transaction, its key the OrderId (the correlation id)",
    .effect = "stock",
    .partner = "email",
    .crash_points = {"BEGIN", "INSERT Inbox", "UPDATE StockItems", "COMMIT"},
    .handle = [](ConsumerEnv& e, const OrderPlaced& m) {
      return Processed(
          KeyedReserveStock(e.store, e.clock).Handle({OrderEventType::kPlaced, m}, m.order_id));
    },
};

const ConsumerEntry kRecordFirst{
    .name = "record-first",
    .summary = "records the key (own commit), then reserves (own commit)",
    .effect = "stock",
    .partner = "email",
    .crash_points = {"SELECT Inbox", "INSERT Inbox", "AfterRecordCommitted", "UPDATE StockItems"},
    .handle = [](ConsumerEnv& e, const OrderPlaced& m) {
      return Processed(RecordFirstReserveStock(e.store, e.clock).Handle(m));
    },
};

const ConsumerEntry kClaimLast{
    .name = "claim-last",
    .summary = "one transaction, but the Inbox row is written after the stock update",
    .effect = "stock",
    .partner = "email",
    // The lesson's consumer reads Reserved back inside its transaction (SELECT StockItems)
    // to report what the second copy saw: a step, and a crash point, like any other.
    .crash_points = {"BEGIN", "UPDATE StockItems", "SELECT StockItems", "INSERT Inbox",
                     "BeforeCommit", "COMMIT"},
    .handle = [](ConsumerEnv& e, const OrderPlaced& m) {
      return Processed(ClaimLastReserveStock(e.store, e.clock).Handle(m).processed);
    },
};

const ConsumerEntry kNaturalKey{
    .name = "natural-key",
    .summary = "no inbox: the reservation row keyed on (OrderId, BookId), in one transaction",
    .effect = "stock",
    .partner = "email",
    .crash_points = {"BEGIN", "INSERT StockReservations", "UPDATE StockItems", "BeforeCommit",
                     "COMMIT"},
    .reset = "DELETE FROM StockReservations;",
    .bench = BenchRole::kRunExactlyOnce,
    .handle = [](ConsumerEnv& e, const OrderPlaced& m) {
      return Processed(NaturalKeyReserveStock(e.store, e.clock).Handle(m));
    },
};

const ConsumerEntry kSharedKey{
    .name = "shared-key",
    .summary = "the inbox transaction, but the Inbox keyed on MessageId alone",
    .effect = "stock",
    .partner = "shared-key-email",
    .crash_points = {"BEGIN", "INSERT InboxByMessageId", "UPDATE StockItems", "BeforeCommit",
                     "COMMIT"},
    .reset = "DELETE FROM InboxByMessageId;",
    .handle = [](ConsumerEnv& e, const OrderPlaced& m) {
      IdempotentReserveStock consumer(e.store, e.clock);
      consumer.inbox_key = InboxKey::kMessageIdOnly;
      return Processed(consumer.Handle(m));
    },
};

// shared-key's partner: the email consumer, its two-phase record in the same MessageId-keyed
// table, so the two subscribers of one message compete for one row.
const ConsumerEntry kSharedKeyEmail{
    .name = "shared-key-email",
    .summary = "the email consumer, its record in the Inbox keyed on MessageId alone",
    .effect = "email",
    .partner = "shared-key",
    .crash_points = {"SELECT InboxByMessageId", "INSERT InboxByMessageId", "EmailProvider.Send",
                     "AfterSend", "UPDATE InboxByMessageId"},
    .reset = "DELETE FROM InboxByMessageId;",
    .handle = [](ConsumerEnv& e, const OrderPlaced& m) {
      SendStockReservedEmail consumer(e.store, Email(e, "shared-key-email"), e.clock);
      consumer.inbox_key = InboxKey::kMessageIdOnly;
      return FromEmailOutcome(consumer.Handle(m));
    },
};

DeliveryResult WithCache(ConsumerEnv& e, const OrderPlaced& m, CacheWrite write) {
  DedupCache cache(Side(e, "a cache consumer"), e.clock);
  return Processed(CacheDedupReserveStock(e.store, cache, write).Handle(m));
}

const ConsumerEntry kCacheCheckThenSet{
    .name = "cache-check-then-set",
    .summary = "the key in a separate cache file: look, reserve (committed), then set",
    .effect = "stock",
    .partner = "email",
    .crash_points = {"SELECT CacheKeys", "AfterCacheCheck", "UPDATE StockItems",
                     "AfterStockCommitted", "INSERT CacheKeys"},
    .side = SideStoreKind::kCache,
    .handle = [](ConsumerEnv& e, const OrderPlaced& m) {
      return WithCache(e, m, CacheWrite::kCheckThenSet);
    },
};

const ConsumerEntry kCacheSetIfAbsent{
    .name = "cache-set-if-absent",
    .summary = "the key in a separate cache file: set if absent (SET NX), then reserve",
    .effect = "stock",
    .partner = "email",
    .crash_points = {"INSERT CacheKeys", "AfterCacheCheck", "UPDATE StockItems",
                     "AfterStockCommitted"},
    .side = SideStoreKind::kCache,
    .handle = [](ConsumerEnv& e, const OrderPlaced& m) {
      return WithCache(e, m, CacheWrite::kSetIfAbsent);
    },
};

const ConsumerEntry kEmailReconcile{
    .name = "email-reconcile",
    .summary = "the email consumer; a record left in progress is settled with the provider by key",
    .effect = "email",
    .partner = "inbox",
    .crash_points = {"SELECT Inbox", "INSERT Inbox", "BeforeSend", "BEGIN IMMEDIATE",
                     "INSERT SentEmails", "INSERT ProviderRequests", "COMMIT", "AfterSend",
                     "UPDATE Inbox"},
    .side = SideStoreKind::kEmailProvider,
    .handle = [](ConsumerEnv& e, const OrderPlaced& m) {
      IdempotentEmailProvider provider(Side(e, "email-reconcile"), e.clock);
      return FromEmailOutcome(ReconcilingEmailSender(e.store, provider, e.clock).Handle(m).outcome);
    },
};

// clang-format off
const std::array<const ConsumerEntry*, 14> kConsumers{
    &kNaive,          &kCheckThenProcess,  &kRecordFirst,      &kInbox,
    &kClaimLast,      &kEmail,             &kNaturalKey,       &kSharedKey,
    &kSharedKeyEmail, &kCacheCheckThenSet, &kCacheSetIfAbsent, &kEmailReconcile,
    &kOptimisticEmail, &kCorrelationKey};
// clang-format on

}  // namespace

std::span<const ConsumerEntry* const> AllConsumers() { return kConsumers; }

const ConsumerEntry* FindConsumer(std::string_view name) {
  for (const ConsumerEntry* c : kConsumers) {
    if (c->name == name) return c;
  }
  return nullptr;
}

std::string ConsumerNames() {
  std::string names;
  for (const ConsumerEntry* c : kConsumers) {
    if (!names.empty()) names += ", ";
    names += c->name;
  }
  return names;
}

}  // namespace dedupsim
