// The table of scenarios: every lesson dedupsim can run, in the order `list` shows them.
// The first six are the post's, in the post's order; `run all` runs exactly those.
#pragma once

#include <span>
#include <string_view>

#include "lesson/scenario.h"

namespace dedupsim {

extern const Scenario kNaiveScenario;
extern const Scenario kCheckThenProcessScenario;
extern const Scenario kInboxScenario;
extern const Scenario kCrashBeforeCommitScenario;
extern const Scenario kConcurrentScenario;
extern const Scenario kEmailScenario;
extern const Scenario kConcurrentDifferentScenario;
extern const Scenario kRecordFirstScenario;
extern const Scenario kNaturalKeyScenario;
extern const Scenario kSharedKeyScenario;
extern const Scenario kClaimLastScenario;
extern const Scenario kProducerDuplicateScenario;
extern const Scenario kRandomIdScenario;
extern const Scenario kCacheArbiterScenario;
extern const Scenario kDuplicateAsErrorScenario;
extern const Scenario kContentMismatchScenario;
extern const Scenario kRetentionScenario;
extern const Scenario kBrokerDedupScenario;
extern const Scenario kEmailReconcileScenario;
extern const Scenario kHungConsumerScenario;
extern const Scenario kIsolationRetryScenario;
extern const Scenario kConcurrentRollbackScenario;
extern const Scenario kPoisonMessageScenario;
extern const Scenario kReceiveCountScenario;
extern const Scenario kOptimisticEmailScenario;
extern const Scenario kOutboxScenario;
extern const Scenario kOrphanClaimScenario;
extern const Scenario kSecondConnectionScenario;
extern const Scenario kCorrelationKeyScenario;
extern const Scenario kDeliveryTagKeyScenario;
extern const Scenario kAckDeadlineScenario;
extern const Scenario kAbsoluteWriteScenario;
extern const Scenario kUnreconcilableScenario;
extern const Scenario kBoundedStoreScenario;
extern const Scenario kDuplicateInTransactionScenario;

std::span<const Scenario* const> AllScenarios();
// nullptr when no scenario has that name.
const Scenario* FindScenario(std::string_view name);

}  // namespace dedupsim
