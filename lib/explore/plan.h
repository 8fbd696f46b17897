// What one schedule runs: the logical orders, the subscribers whose effects are checked,
// and per consumer instance the deliveries it receives, in order. A fault (faults.h)
// builds the plans for a strategy; the scheduler runs a plan under one choice of
// interleaving at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/message.h"
#include "explore/strategy.h"

namespace dedupsim::explore {

// One message handed to one instance. The broker redelivers it to the same (restarted)
// instance until a delivery returns: after a crash, and after the database refused it.
struct Delivery {
  const Strategy* subscriber = nullptr;  // the consumer that handles it
  size_t order = 0;                      // index into Plan::orders
  OrderPlaced message;
  // crash_at[i]: the crash point where attempt i+1 dies; "" or absent: no crash.
  std::vector<std::string> crash_at;
  // crash_step[i]: attempt i+1 dies just before its crash_step[i]-th step (1-based); 0 or
  // absent: no crash. Names the step by its place, so of two steps with one label (two
  // BEGINs) either can be chosen. Used where crash_at names nothing for that attempt.
  std::vector<int> crash_step;
  bool ack_lost = false;  // handled, but the broker never hears the ack
  // When the broker hands this delivery over, counted from the plan's start: its clock
  // (:Now) reads start + arrives_after, so its timestamps differ from an earlier
  // delivery's. Each delivery has its own clock: no step moves another's.
  std::chrono::milliseconds arrives_after{0};
  // A redelivery (after a crash or a refusal) arrives this much after the attempt before.
  std::chrono::milliseconds redelivered_after{0};
};

// A book on the shelf when a plan starts: its StockItems row (store/records.h's StockItem).
using ::dedupsim::BookRow;

struct InstanceScript {
  std::vector<Delivery> deliveries;
  int start_after = -1;  // the instance that must finish before this one starts; -1: none
};

struct Plan {
  std::string variant;  // what sets this plan apart within its fault ("crash at COMMIT")
  // The orders its messages carry. Each must have its effect exactly once per subscriber;
  // several may share a book.
  std::vector<LogicalOrder> orders;
  // The StockItems rows before the run. Empty: one row per order (Dune, Solaris ...; 10 on
  // hand, 0 reserved). A book no order names must keep its row exactly as it was.
  std::vector<BookRow> books;
  // The clock when the plan starts (nullopt: the explorer's epoch, 2026-01-05 09:00 UTC).
  std::optional<TimePoint> start;
  // Nothing in this plan calls for reconciliation: every delivery ran on its own or after
  // the one before had finished. A delivery that flags the message for a person here
  // fails the plan (its outcome is still counted as reconcile).
  bool strict = false;
  std::vector<const Strategy*> subscribers;  // each must apply its effect once per order
  std::vector<InstanceScript> instances;     // A, B, C ... at most kMaxInstances
  // Random plans: the faults (faults.h names) this plan actually holds, as drawn.
  std::vector<std::string> faults_held;
};

inline constexpr int kMaxInstances = 8;

// "A", "B", ...
std::string InstanceName(int index);

}  // namespace dedupsim::explore
