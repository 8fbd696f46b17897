// The adapters: each row wraps one consumer. Four wrap the post's consumers in
// lib/consumers/; record-first and claim-last wrap the variants in explore/record_first.h.
#include "explore/strategies.h"

#include <array>

#include "consumers/check_then_process.h"
#include "consumers/email.h"
#include "consumers/idempotent.h"
#include "consumers/naive.h"
#include "explore/record_first.h"
#include "schema.h"

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
  return ReadStock(probe.db(), order.book_id).reserved / order.quantity;
}

int64_t EmailApplied(EffectProbe& probe, const LogicalOrder& order) {
  return probe.EmailsSentFor(order);
}

namespace {

DeliveryResult Processed(bool did_work) {
  return did_work ? DeliveryResult::kProcessed : DeliveryResult::kSkipped;
}

const Strategy kNaive{
    .name = "naive",
    .summary = "adds the quantity on every delivery, no record",
    .effect = "stock",
    .partner = "email",
    .crash_points = {"UPDATE StockItems"},
    .handle = [](DeliveryContext& c, const OrderPlaced& m) {
      NaiveReserveStock(c.db).Handle(m);
      return DeliveryResult::kProcessed;
    },
    .applied = &StockApplied,
};

const Strategy kCheckThenProcess{
    .name = "check-then-process",
    .summary = "looks in the Inbox, reserves (own commit), then records (own commit)",
    .effect = "stock",
    .partner = "email",
    .crash_points = {"SELECT Inbox", "UPDATE StockItems", "AfterStockCommitted", "INSERT Inbox"},
    .handle = [](DeliveryContext& c, const OrderPlaced& m) {
      return Processed(CheckThenProcessReserveStock(c.db, c.clock).Handle(m));
    },
    .applied = &StockApplied,
};

const Strategy kInbox{
    .name = "inbox",
    .summary = "claims the key, reserves and commits both in one transaction",
    .effect = "stock",
    .partner = "email",
    .crash_points = {"BEGIN", "INSERT Inbox", "UPDATE StockItems", "BeforeCommit", "COMMIT"},
    .handle = [](DeliveryContext& c, const OrderPlaced& m) {
      return Processed(IdempotentReserveStock(c.db, c.clock).Handle(m));
    },
    .applied = &StockApplied,
};

const Strategy kEmail{
    .name = "email",
    .summary = "two-phase record around an email: in progress, send, completed",
    .effect = "email",
    .partner = "inbox",
    .crash_points = {"SELECT Inbox", "INSERT Inbox", "EmailProvider.Send", "AfterSend",
                     "UPDATE Inbox"},
    .handle = [](DeliveryContext& c, const OrderPlaced& m) {
      switch (SendStockReservedEmail(c.db, c.email, c.clock).Handle(m)) {
        case EmailOutcome::kSent:
          return DeliveryResult::kProcessed;
        case EmailOutcome::kAlreadySent:
          return DeliveryResult::kSkipped;
        case EmailOutcome::kNeedsReconciliation:
          break;
      }
      return DeliveryResult::kNeedsReconciliation;
    },
    .applied = &EmailApplied,
};

const Strategy kRecordFirst{
    .name = "record-first",
    .summary = "records the key (own commit), then reserves (own commit)",
    .effect = "stock",
    .partner = "email",
    .crash_points = {"INSERT Inbox", "AfterRecordCommitted", "UPDATE StockItems"},
    .handle = [](DeliveryContext& c, const OrderPlaced& m) {
      return Processed(RecordFirstReserveStock(c.db, c.clock).Handle(m));
    },
    .applied = &StockApplied,
};

const Strategy kClaimLast{
    .name = "claim-last",
    .summary = "one transaction, but the Inbox row is written after the stock update",
    .effect = "stock",
    .partner = "email",
    .crash_points = {"BEGIN", "UPDATE StockItems", "INSERT Inbox", "BeforeCommit", "COMMIT"},
    .handle = [](DeliveryContext& c, const OrderPlaced& m) {
      return Processed(ClaimLastReserveStock(c.db, c.clock).Handle(m));
    },
    .applied = &StockApplied,
};

// The post's order: the naive consumer, the check and its reversal, the inbox and its
// reordering, then the side effect outside the transaction.
constexpr std::array<const Strategy*, 6> kStrategies{
    &kNaive, &kCheckThenProcess, &kRecordFirst, &kInbox, &kClaimLast, &kEmail};

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
