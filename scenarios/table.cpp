#include "scenarios.h"

namespace dedupsim {

namespace {

const Scenario* const kScenarios[] = {
    // The post's six, in its order.
    &kNaiveScenario,
    &kCheckThenProcessScenario,
    &kInboxScenario,
    &kCrashBeforeCommitScenario,
    &kConcurrentScenario,
    &kEmailScenario,
    // Beyond the post.
    &kConcurrentDifferentScenario,
    // The post's other lessons: its experiments, pitfalls, retention, broker-side dedup.
    &kRecordFirstScenario,
    &kNaturalKeyScenario,
    &kSharedKeyScenario,
    &kClaimLastScenario,
    &kProducerDuplicateScenario,
    &kRandomIdScenario,
    &kCacheArbiterScenario,
    &kDuplicateAsErrorScenario,
    &kContentMismatchScenario,
    &kRetentionScenario,
    &kBrokerDedupScenario,
    &kEmailReconcileScenario,
    // Lessons from the field (issue 13). Concurrency and locking:
    &kConcurrentRollbackScenario,
    &kOrphanClaimScenario,
    // Side effects:
    &kOptimisticEmailScenario,
    &kOutboxScenario,
    &kSecondConnectionScenario,
    &kAbsoluteWriteScenario,
    // Keys:
    &kCorrelationKeyScenario,
    &kDeliveryTagKeyScenario,
    &kAckDeadlineScenario,
    // Retention and windows:
    &kBoundedStoreScenario,
    // Broker behaviour:
    &kPoisonMessageScenario,
    &kReceiveCountScenario,
    // Operations:
    &kUnreconcilableScenario,
    // A row-locking server's transactions (issue 12):
    &kDuplicateInTransactionScenario,
    &kHungConsumerScenario,
    &kIsolationRetryScenario,
};

}  // namespace

std::span<const Scenario* const> AllScenarios() { return kScenarios; }

const Scenario* FindScenario(std::string_view name) {
  for (const Scenario* s : kScenarios) {
    if (s->name == name) return s;
  }
  return nullptr;
}

}  // namespace dedupsim
