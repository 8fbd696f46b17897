// Runs two competing consumer instances at the same time, each with its own connection: as
// threads of this process, or as forked child processes that report back through a pipe.
//
// The race follows the options, not the scheduler. The first instance runs until its hold
// point (a hook where it holds what it took, e.g. the write lock at BeforeCommit) and
// announces that moment, R. The second instance, already started and connected, is released
// at R + stagger; the first goes on at R + hold. Events settle what the clock alone cannot:
//  - stagger < hold: the first goes on only once the second is blocked too (its busy
//    handler ran; the server showed it waiting), or, where it meets no lock of the first's
//    (PairTiming::second_blocks false), has reached its own hold point, or has ended, so
//    the second really meets
//    the first's lock however late it ran; and no earlier than the moment the second was
//    blocked plus hold - stagger, so a second that a starved scheduler ran late still waits
//    hold - stagger (on time, blocked at R + stagger, that is R + hold);
//  - stagger >= hold: the second starts only after the first instance has ended.
// What happens between the two outside both (a hand-over: the broker gives up on the first's
// delivery and hands the message to the second) is the runner's, in the process that runs
// the pair, after the first reached its hold point and before the second is released, so
// it is recorded where it happened: after the first's delivery began, before the second's.
// A starved thread or process changes the timings, never which of the two happens; and the
// second's busy timeout starts only once the first instance has ended, so neither a hold
// longer than that timeout nor a stalled first instance makes it give up. The waits stay
// real lock waits. Each instance runs on a store of its own. Where the store measures its
// own lock waits (Store::lock_waits: SQLite's busy handler) each instance keeps its lock
// history (when it held the write lock, when it was blocked), on the steady clock that
// threads and forked processes share, so a scenario can tell who waited for whom from the
// intervals; on a server the second's waits are the server's word, seen from a side
// connection (Store::WatchedStatements).
#pragma once

#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/hooks.h"
#include "lesson/scenario.h"
#include "os/child_process.h"
#include "os/unique_fd.h"
#include "store/lock_waits.h"
#include "store/store.h"

namespace dedupsim {

struct PairTiming {
  std::chrono::milliseconds hold{0};     // the first goes on this long after its hold point
  std::chrono::milliseconds stagger{0};  // the second starts this long after it
  // stagger < hold: the first waits until the second is blocked on a lock (or has ended).
  // Set false where the second meets no lock of the first's: the first then waits until the
  // second has reached its own hold point (or has ended).
  bool second_blocks = true;
};

struct InstanceResult {
  std::string name;
  int pid = 0;
  nlohmann::json value;
  std::chrono::microseconds elapsed{0};  // from its release to its end
  // Where the store measures its own lock waits (SQLite): what its busy handler saw, and
  // its write-lock holds and blocked waits. Absent and empty where it does not (a server).
  std::optional<BusyStats> busy;
  LockHistory locks;
  // A server: its statements as the server showed them from a side connection.
  std::vector<WatchedStatement> statements;
};

// One instance of the pair on its own connection: the runner's gate. The runner
// (RunGatedPair) orders the pair by events; the instance says how its store shows a wait
// and how it runs its task (StorePairInstance, on either backend).
class PairInstance {
 public:
  virtual ~PairInstance() = default;
  // The second instance: on_blocked runs each time it is seen waiting for a lock the first
  // holds (SQLite: its busy handler ran; a server: the side connection shows the wait).
  virtual void OnBlocked(std::function<void()> on_blocked) = 0;
  // The second instance: while first_pending() is true the first's transaction goes on, and
  // a wait for its lock uses no timeout (SQLite's busy timeout; a server waits without one).
  // first_ended_fd turns readable when the first instance has ended: a wait may end its
  // pause between two tries then (SQLite's busy handler).
  virtual void KeepWaitingWhile(std::function<bool()> first_pending, int first_ended_fd) = 0;
  // The task; the first instance runs hold_point at its hold point. handed: the second's
  // text from the runner's hand-over (HandOver), else "".
  virtual nlohmann::json Run(const Hook& hold_point, const std::string& handed) = 0;
  // Ends the connection and fills what the backend kept (busy and lock history, or the
  // watched statements) and elapsed, from started.
  virtual void Finish(InstanceResult& result, SteadyTime started) = 0;
};

// Opens instance 0 (the first) or 1 (the second) on its own connection, in the thread or
// the forked process that runs it.
using PairInstanceOpener = std::function<std::unique_ptr<PairInstance>(int index)>;

// The runner's step between the pair: run in the process and thread of control that called
// RunGatedPair (never in an instance), once the first instance has reached its hold point
// (or ended without reaching it) and before the second is released; it may take as long as
// it needs (the second then starts no earlier than its end). Returns one line of text (no
// newline) for the second's task (PairInstance::Run's handed). May throw: RunGatedPair
// throws it after both instances ended (the second ran with handed "").
using HandOver = std::function<std::string()>;

// The one runner of a racing pair, for every backend: as threads or as forked processes
// per env.options.instances, ordered by events (the header's comment): names are the
// trace's instances. timing.second_blocks false: the first does not wait for the second
// (which ends the first's wait as its block does); hand_over, when given, runs between the
// two (HandOver). Returns their results in order; throws the first instance's error (thread
// mode), or UnplannedDeath when a child died, or the hand-over's error.
std::vector<InstanceResult> RunGatedPair(ScenarioEnv& env, const std::array<std::string, 2>& names,
                                         const PairInstanceOpener& open, const PairTiming& timing,
                                         const HandOver& hand_over = {});

// An instance of RunGatedPair on a store of its own: blocked when the store shows a wait
// (Store::SetWaitListener: SQLite's busy handler, or the server seen from a side
// connection); it keeps its lock history where the store measures its waits
// (Store::lock_waits), or the statements as the server showed them (WatchedStatements).
// open makes the store (in the thread or process that runs it); body is the task, with
// PairInstance::Run's hold_point and handed.
using StoreBody =
    std::function<nlohmann::json(Store&, const Hook& hold_point, const std::string& handed)>;
std::unique_ptr<PairInstance> StorePairInstance(std::function<std::unique_ptr<Store>()> open,
                                                StoreBody body);

// A forked instance whose report, one JSON object ({"value", "elapsedUs", "events", ...}),
// arrives on report; CollectChildReports closes report and reaps process.
struct ChildInstance {
  std::string name;
  ChildProcess process;
  UniqueFd report;
};
struct ChildReport {
  InstanceResult result;   // name, pid, value and elapsed; the rest is the caller's
  nlohmann::json message;  // the whole report, for what the caller's children add
};
// Reads each child's report in order, reaps it and records its trace events. Throws
// UnplannedDeath naming the first child that failed or sent no report.
std::vector<ChildReport> CollectChildReports(ScenarioEnv& env,
                                             std::vector<ChildInstance>& children);

// Milliseconds from the trace's origin to t (for figures).
double MsSinceOrigin(const ScenarioEnv& env, SteadyTime t);

}  // namespace dedupsim
