// Shared by the scenarios where two consumers run at once (concurrent, concurrent-different,
// claim-last): run the inbox pair, and read who waited for whom from the lock intervals.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/message.h"
#include "lesson/instances.h"
#include "lesson/scenario.h"
#include "store/error.h"
#include "store/store.h"

namespace dedupsim {

struct PairOutcome {
  bool first_processed = false;
  bool second_processed = false;
  InstanceResult first;
  InstanceResult second;
  // On a server database (PostgreSQL): the second instance's statements as the server saw
  // them from a side connection; then `watched` is true and the lock intervals are empty.
  bool watched = false;
  std::vector<WatchedStatement> second_statements;
  // RunInboxPair on a server above READ COMMITTED (--isolation): the SQLSTATE the second's
  // delivery failed with (40001: it updated a row committed after its snapshot), else empty;
  // and the isolation level its session ran at ("read-committed", ...; SQLite: serializable).
  std::string second_sqlstate;
  std::string isolation;
  // SQLite: the second instance was blocked while the first held the write lock, and went
  // on only after the first's hold ended (WaitedFor); a busy call alone does not count.
  // A server: one of its statements waited for a lock the first held.
  bool SecondWaited() const;
  // What the second instance's first wait was on: "database" (SQLite), "row StockItems",
  // "key Inbox" (a server), or "none".
  std::string SecondWaitedOn() const;
};

// The broker's steps between the pair that hand the second instance its delivery (a
// HandOver: after the first reached its hold point, before the second starts, so the
// broker's release of the first's delivery is drawn after the first received it). Returns
// the delivery the second works for, in place of its StoreTask's.
using HandSecond = std::function<DeliveryRef()>;

// The pair's timing from the run options (--hold-ms, --stagger-ms): see instances.h.
PairTiming TimingFrom(const RunOptions& options);

// One instance's work on its own store, on whichever backend the scenario runs.
struct StoreTask {
  std::string name;      // "A", "B": the trace's instance
  DeliveryRef delivery;  // what its steps work for; none (number 0) to mark none
  // Returns what the scenario wants back; the first instance runs hold_point at its hold
  // point, the second gets a hook that does nothing.
  std::function<nlohmann::json(Store&, const Hook& hold_point)> body;
};

// Runs the pair in RunGatedPair's order and timing (instances.h), as threads or processes
// per the options, each instance on a store of its own. On SQLite the lock intervals are
// kept (Store::lock_waits); on a server database (env.backend not SQLite) the second's
// statements are kept as the server saw them (watched).
// first_processed and second_processed are left for the caller to read from the values.
// timing: TimingFrom(env.options) unless given (e.g. second_blocks false where the second
// meets no lock of the first's on SQLite).
// hand_second, when given, hands the second its delivery (HandSecond).
PairOutcome RunStorePair(ScenarioEnv& env, const StoreTask& first, const StoreTask& second,
                         const std::optional<PairTiming>& timing = std::nullopt,
                         const HandSecond& hand_second = {});

// Instance A handles first_message and holds its transaction at BeforeCommit; instance B
// handles second_message, released options.stagger after A reached BeforeCommit.
// first_delivery, second_delivery: the broker's deliveries, when a broker handed them out;
// without, the first and second delivery of the same message, or the first of each;
// hand_second: the broker hands the second its delivery between the two (HandSecond).
PairOutcome RunInboxPair(ScenarioEnv& env, const OrderPlaced& first_message,
                         const OrderPlaced& second_message, DeliveryRef first_delivery = {},
                         DeliveryRef second_delivery = {}, const HandSecond& hand_second = {});

// For an instance's body on a server above READ COMMITTED (--isolation), called from the
// handler that caught e: rethrows it (as thrown) unless
// the server asked for a retry (40001, 40P01); else rolls back, notes the delivery's outcome
// "SerializationFailure" and returns {"processed": false, "sqlstate": the code}, the
// delivery's result shown as it happened (only a retry loop gets it done: isolation-retry).
// verdict, when given, judges the outcome after the rollback from what the database holds
// then: for a copy of a message another instance processed, the refused copy is right when
// the order took effect once (ReservedVerdictApart). Without it (another message, which the
// broker redelivers) the outcome is not judged: a serialization failure is what happened.
nlohmann::json SerializationFailure(Store& store, const StoreError& e,
                                    const std::function<const char*()>& verdict = {});

// Whether the second of a pair must meet the server's 40001: it runs on a server above READ
// COMMITTED (isolation, as its session reported it) and began before the first committed
// (--stagger-ms below --hold-ms), so what it updates or claims changed after its snapshot.
bool SecondMeetsSerializationFailure(const ScenarioEnv& env, const std::string& isolation);

// secondWaited, waitMs, busyRetries, secondMs, firstMs, firstLockHeldMs [[from, to], ...],
// secondBlockedMs [[from, to], ...] (milliseconds since the trace's origin); with a prefix
// ("differentBooks"): differentBooksSecondWaited, ...
void AddWaitFigures(const ScenarioEnv& env, const PairOutcome& pair,
                    nlohmann::ordered_json& figures, const std::string& prefix = "");

// The secondWaited expectation for these options: by construction (instances.h), the second
// waits exactly when it is released before the first goes on.
nlohmann::ordered_json ExpectedWait(const RunOptions& options);

}  // namespace dedupsim
