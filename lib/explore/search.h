// The searches over a plan's schedules, each a Chooser the scheduler asks at every step
// (scheduler.h). Runs are deterministic, so a search replays a schedule from a freshly
// reset database by following the choices it made before, and goes on from there.
//
// - PrefixChooser and NextPrefix: every interleaving, depth first (no reduction; the brute
//   force the tests compare the reductions with).
// - SleepSetSearch: depth first with sleep sets (Godefroid). One complete schedule per
//   class of schedules that differ only in the order of independent steps (Independent,
//   footprint.h), but it starts runs that end cut short: every instance that may move is
//   asleep.
// - SourceSetSearch: optimal DPOR (Abdulla, Aronis, Jonsson, Sagonas, "Optimal dynamic
//   partial order reduction", POPL 2014): sleep sets with wakeup trees. After each run it
//   finds the races between its steps and schedules, at the state before the first step of
//   each race, a sequence that reverses it, unless a step asleep there starts an equivalent
//   one. Only those sequences are run from a state, so no run ends cut short where the
//   sleep sets alone would.
//
// A search is not thread-safe; one search explores one plan, and must outlive the runs it
// chooses for.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "explore/footprint.h"
#include "explore/scheduler.h"

namespace dedupsim::explore {

// Follows a prefix, then always takes the lowest-numbered eligible instance. The prefix
// must outlive the chooser.
class PrefixChooser final : public Chooser {
 public:
  explicit PrefixChooser(const std::vector<int>& prefix) : prefix_(prefix) {}
  std::optional<int> Choose(size_t depth, uint32_t eligible) override;

 private:
  const std::vector<int>& prefix_;
};

// The prefix of the next schedule after run in depth-first order over every interleaving,
// or false when none is left.
bool NextPrefix(const ScheduleResult& run, std::vector<int>& prefix);

// Takes exactly the given choices and gives up after them. picks must outlive the chooser.
class ExactChooser final : public Chooser {
 public:
  explicit ExactChooser(const std::vector<int>& picks) : picks_(picks) {}
  std::optional<int> Choose(size_t depth, uint32_t eligible) override;

 private:
  const std::vector<int>& picks_;
};

// A reduced search: Run the scheduler with it, call Finished with whether the run ended
// with a schedule (not abandoned), then Next; stop when Next returns false.
class ReducedSearch : public Chooser {
 public:
  // The run just chosen for is over (complete: it ended with a schedule).
  virtual void Finished(bool complete) = 0;
  // Moves to the next schedule to run. False when every class was run.
  virtual bool Next() = 0;
};

// An instance whose next step, from some state, is known with what it touches.
struct PendingStep {
  int instance = 0;
  Footprint footprint;
};

// Depth-first search with sleep sets (Godefroid): a schedule that only swaps two adjacent
// independent steps of a schedule already explored is not run again. At each state the
// search remembers the instances whose step from there was already explored (done) or is
// known to lead only to schedules equivalent to explored ones (asleep). Taking a step s
// from a state, the child state's sleep set is every asleep or done instance whose step
// is independent of s: running it after s gives a schedule equivalent to running it
// before s, which was, or will be, explored. A state where every eligible instance is
// asleep ends the run without a schedule (every schedule through it is explored
// elsewhere). Each equivalence class of complete schedules (same steps, independent ones
// reordered) is run exactly once; all of its schedules have the same length and end in
// the same state, so the outcomes, the figures and the shortest failing length are those
// of the full search.
class SleepSetSearch final : public ReducedSearch {
 public:
  std::optional<int> Choose(size_t depth, uint32_t eligible) override;
  void Took(size_t depth, int instance, const Footprint& footprint) override;
  void Finished(bool) override {}
  bool Next() override;

 private:
  struct Frame {
    uint32_t eligible = 0;
    int pick = 0;
    Footprint footprint;               // what the pick's step touched
    std::vector<PendingStep> asleep;   // asleep on arriving at this state
    std::vector<PendingStep> done;     // picks already explored from this state
  };
  std::vector<Frame> frames_;
};

// Optimal DPOR: source sets and wakeup trees over the sleep sets above. Each state keeps,
// besides its sleep set and its explored picks, a wakeup tree: the sequences of steps still
// to run from it, in order, each one the start of a schedule no explored one is equivalent
// to. A run follows the tree's first branch; where the tree ends it takes the lowest
// eligible instance not asleep. Once the run is over (Finished), each race in it (two
// dependent steps i < j of different instances, i happening before j with no step between
// them in that order) adds at the state before i the sequence v: the steps after i that do
// not happen after it, then j. It is left out when an instance asleep there, or already
// explored from there, could start a schedule equivalent to v.x (a weak initial of v), and
// merged into the tree where a branch already starts one.
//
// A step that the scheduler would not hand out at that point (an instance still blocked
// on a lock the sequence does not release) is the one case the theory leaves out: such a
// race is not reversible and adds nothing; should a branch still find its instance not
// eligible, the run takes the next branch, or the lowest eligible instance not asleep
// (counted by infeasible_branches()). The tests against brute force, and the count of runs
// cut short, would show a class lost or a run wasted that way.
class SourceSetSearch final : public ReducedSearch {
 public:
  std::optional<int> Choose(size_t depth, uint32_t eligible) override;
  void Took(size_t depth, int instance, const Footprint& footprint) override;
  void Finished(bool complete) override;
  bool Next() override;

  int64_t infeasible_branches() const { return infeasible_; }

 private:
  struct Node {
    PendingStep step;
    std::vector<Node> children;
  };
  struct Frame {
    uint32_t eligible = 0;
    int pick = 0;
    Footprint footprint;
    std::vector<PendingStep> asleep;
    std::vector<PendingStep> done;
    std::vector<Node> wakeup;  // branches still to run from this state, in order
    std::vector<Node> guide;   // the rest of the branch the pick started (the child's tree)
  };

  void Race(size_t i, size_t j, const std::vector<std::vector<bool>>& after_i_of);
  static void Insert(std::vector<Node>& tree, std::vector<PendingStep> v);

  std::vector<Frame> frames_;
  int64_t infeasible_ = 0;
};

}  // namespace dedupsim::explore
