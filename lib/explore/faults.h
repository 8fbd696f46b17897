// The table of faults: the columns of the explorer's matrix. A fault turns a strategy into
// the plans to explore (most faults have one; the crash fault has one per crash point).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/message.h"
#include "explore/plan.h"

namespace dedupsim::explore {

// How big the concurrent fault's world is: this many copies of the message at once,
// copy k handed to instance k mod instances (so each instance takes its copies one after
// another). The matrix's default is two copies in two instances.
struct WorldSize {
  int instances = 2;
  int deliveries = 2;
  bool operator==(const WorldSize&) const = default;
};

struct Fault {
  std::string_view name;     // kebab-case, used on the command line
  std::string_view summary;  // one line
  // The plans for strategy in the lesson world (the explorer's matrix: one order of two
  // books, stock at zero, a clock that stands still). ids makes every message, order and
  // book id, so the same seed gives the same plans. Null: the fault is the class world's only.
  std::vector<Plan> (*plans)(const Strategy& strategy, IdGenerator& ids) = nullptr;
  // For a fault whose size can be chosen: the plans for that size (plans is this with
  // the default WorldSize). Null: the fault has one size.
  std::vector<Plan> (*sized_plans)(const Strategy& strategy, IdGenerator& ids,
                                   const WorldSize& world) = nullptr;
  // The plans of the class world (dedupsim check, see ClassWorld below). Null: not graded.
  std::vector<Plan> (*graded_plans)(const Strategy& strategy, IdGenerator& ids) = nullptr;
  // More plans, read from what one of its plans did: the crash fault's second crash, at each
  // step the redelivery took (redelivery_steps: their labels, as crash points name them).
  // Called for a plan with one instance, after its one schedule. Null: none.
  std::vector<Plan> (*follow_up)(const Plan& plan,
                                 const std::vector<std::string>& redelivery_steps) = nullptr;
  // Extra words for the summary in the class world ("", or what its plans add there).
  std::string_view graded_summary = "";
};

// The lesson world's faults: the columns of `dedupsim explore`.
std::span<const Fault* const> AllFaults();
// The class world's faults: the columns of `dedupsim check`.
std::span<const Fault* const> GradedFaults();
// nullptr when no fault of the list has that name.
const Fault* FindFault(std::string_view name, std::span<const Fault* const> among = AllFaults());
std::string FaultNames(std::span<const Fault* const> among = AllFaults());

// The class world, where `dedupsim check` grades a consumer: what a grader needs to tell a
// right consumer from a subtly wrong one. Two books on the shelf, neither at zero (Dune: 20
// on hand, 7 reserved; Solaris: 12 on hand, 5 reserved); the message under test is an
// order of 3 Dune; a plan of several orders adds 2 Dune, 3 Solaris and another 3 Dune. Each
// delivery has its own clock: redeliveries come seconds, hours and a midnight later.
// Plans where nothing calls for reconciliation are strict (Plan::strict).
struct ClassWorld {
  static constexpr int64_t kDuneOnHand = 20;
  static constexpr int64_t kDuneReserved = 7;
  static constexpr int64_t kSolarisOnHand = 12;
  static constexpr int64_t kSolarisReserved = 5;
  static constexpr int64_t kQuantity = 3;  // the message under test: 3 Dune
};
// When a class-world plan starts: 2026-01-05 09:00 UTC, or 2025-12-31 23:59:58 for a plan
// whose redelivery crosses midnight (and the year).
TimePoint MorningStart();
TimePoint BeforeMidnight();
// The class world's clean plan (one delivery, nothing goes wrong), whose steps name the
// crash points.
Plan GradedCleanPlan(const Strategy& strategy, IdGenerator& ids);

// How long the broker waits for an ack before it redelivers (lost-ack).
inline constexpr std::chrono::milliseconds kLockDuration{30000};

// A new logical order (own book) and its message, with ids from ids.
LogicalOrder NewLogicalOrder(IdGenerator& ids, int64_t quantity);
OrderPlaced NewMessage(IdGenerator& ids, const LogicalOrder& order);

}  // namespace dedupsim::explore
