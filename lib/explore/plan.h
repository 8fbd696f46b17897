// What one schedule runs: the logical orders, the subscribers whose effects are checked,
// and per consumer instance the deliveries it receives, in order. A fault (faults.h)
// builds the plans for a strategy; the scheduler runs a plan under one choice of
// interleaving at a time.
#pragma once

#include <chrono>
#include <string>
#include <vector>

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
  bool ack_lost = false;  // handled, but the broker never hears the ack
  // The clock moves this far before the delivery starts (a redelivery after a lock
  // expired), so its timestamps differ from the first delivery's.
  std::chrono::milliseconds arrives_after{0};
};

struct InstanceScript {
  std::vector<Delivery> deliveries;
  int start_after = -1;  // the instance that must finish before this one starts; -1: none
};

struct Plan {
  std::string variant;  // what sets this plan apart within its fault ("crash at COMMIT")
  std::vector<LogicalOrder> orders;
  std::vector<const Strategy*> subscribers;  // each must apply its effect once per order
  std::vector<InstanceScript> instances;     // A, B, C ... at most kMaxInstances
  // Random plans: the faults (faults.h names) this plan actually holds, as drawn.
  std::vector<std::string> faults_held;
};

inline constexpr int kMaxInstances = 8;

// "A", "B", ...
std::string InstanceName(int index);

}  // namespace dedupsim::explore
