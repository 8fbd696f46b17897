#include "explore/search.h"

#include <bit>
#include <stdexcept>

namespace dedupsim::explore {

namespace {

uint32_t Mask(const std::vector<PendingStep>& list) {
  uint32_t m = 0;
  for (const PendingStep& a : list) m |= 1u << a.instance;
  return m;
}

// The sleep set on arriving at a state: every instance asleep or explored at its parent
// whose step is independent of the step the parent took (the parent's own pick excluded).
template <typename Frame>
std::vector<PendingStep> SleepAfter(const Frame& parent) {
  std::vector<PendingStep> asleep;
  for (const std::vector<PendingStep>* list : {&parent.asleep, &parent.done}) {
    for (const PendingStep& a : *list) {
      if (a.instance != parent.pick && Independent(a.footprint, parent.footprint)) {
        asleep.push_back(a);
      }
    }
  }
  return asleep;
}

// Whether a schedule from a state may start with q's step and still be equivalent to one
// that starts with v (q is a weak initial of v): q's first step in v has no dependent step
// before it in v, or q has no step in v and its step is independent of all of v's.
bool WeakInitial(const PendingStep& q, const std::vector<PendingStep>& v) {
  for (size_t m = 0; m < v.size(); ++m) {
    if (v[m].instance != q.instance) continue;
    for (size_t l = 0; l < m; ++l) {
      if (!Independent(v[l].footprint, v[m].footprint)) return false;
    }
    return true;
  }
  for (const PendingStep& step : v) {
    if (!Independent(q.footprint, step.footprint)) return false;
  }
  return true;
}

}  // namespace

std::optional<int> PrefixChooser::Choose(size_t depth, uint32_t eligible) {
  if (depth < prefix_.size()) return prefix_[depth];
  return std::countr_zero(eligible);
}

std::optional<int> ExactChooser::Choose(size_t depth, uint32_t) {
  if (depth >= picks_.size()) return std::nullopt;
  return picks_[depth];
}

bool NextPrefix(const ScheduleResult& run, std::vector<int>& prefix) {
  for (size_t i = run.picks.size(); i-- > 0;) {
    uint32_t higher = run.eligible[i] & ~((2u << run.picks[i]) - 1u);
    if (higher != 0) {
      prefix.assign(run.picks.begin(), run.picks.begin() + static_cast<std::ptrdiff_t>(i));
      prefix.push_back(std::countr_zero(higher));
      return true;
    }
  }
  return false;
}

std::optional<int> SleepSetSearch::Choose(size_t depth, uint32_t eligible) {
  if (depth < frames_.size()) {
    if (frames_[depth].eligible != eligible) throw std::logic_error("a replay changed course");
    return frames_[depth].pick;
  }
  Frame frame;
  frame.eligible = eligible;
  if (depth > 0) frame.asleep = SleepAfter(frames_[depth - 1]);
  uint32_t open = eligible & ~Mask(frame.asleep);
  if (open == 0) return std::nullopt;  // every schedule from here is explored elsewhere
  frame.pick = std::countr_zero(open);
  frames_.push_back(std::move(frame));
  return frames_.back().pick;
}

void SleepSetSearch::Took(size_t depth, int, const Footprint& footprint) {
  frames_.at(depth).footprint = footprint;
}

bool SleepSetSearch::Next() {
  while (!frames_.empty()) {
    Frame& f = frames_.back();
    f.done.push_back({f.pick, f.footprint});
    uint32_t open = f.eligible & ~Mask(f.asleep) & ~Mask(f.done);
    if (open != 0) {
      f.pick = std::countr_zero(open);
      return true;
    }
    frames_.pop_back();
  }
  return false;
}

std::optional<int> SourceSetSearch::Choose(size_t depth, uint32_t eligible) {
  if (depth < frames_.size()) {
    if (frames_[depth].eligible != eligible) throw std::logic_error("a replay changed course");
    return frames_[depth].pick;
  }
  Frame frame;
  frame.eligible = eligible;
  if (depth > 0) {
    Frame& parent = frames_[depth - 1];
    frame.asleep = SleepAfter(parent);
    frame.wakeup = std::move(parent.guide);
    parent.guide.clear();
  }
  const uint32_t open = eligible & ~Mask(frame.asleep);
  while (!frame.wakeup.empty()) {
    Node node = std::move(frame.wakeup.front());
    frame.wakeup.erase(frame.wakeup.begin());
    if ((open & (1u << node.step.instance)) == 0) {
      ++infeasible_;
      continue;
    }
    frame.pick = node.step.instance;
    frame.guide = std::move(node.children);
    frames_.push_back(std::move(frame));
    return frames_.back().pick;
  }
  if (open == 0) return std::nullopt;  // every schedule from here is explored elsewhere
  frame.pick = std::countr_zero(open);
  frames_.push_back(std::move(frame));
  return frames_.back().pick;
}

void SourceSetSearch::Took(size_t depth, int, const Footprint& footprint) {
  frames_.at(depth).footprint = footprint;
}

void SourceSetSearch::Finished(bool) {
  const size_t n = frames_.size();
  auto dependent = [&](size_t a, size_t b) {
    return frames_[a].pick == frames_[b].pick ||
           !Independent(frames_[a].footprint, frames_[b].footprint);
  };
  // before[j][i]: step i happens before step j (a chain of dependent steps leads from i to j).
  std::vector<std::vector<bool>> before(n, std::vector<bool>(n, false));
  for (size_t j = 0; j < n; ++j) {
    for (size_t i = 0; i < j; ++i) {
      if (!dependent(i, j)) continue;
      before[j][i] = true;
      for (size_t k = 0; k < i; ++k) {
        if (before[i][k]) before[j][k] = true;
      }
    }
  }
  for (size_t j = 0; j < n; ++j) {
    for (size_t i = 0; i < j; ++i) {
      if (frames_[i].pick == frames_[j].pick || !dependent(i, j)) continue;
      bool direct = true;  // no step between them that i happens before and that happens before j
      for (size_t k = i + 1; k < j && direct; ++k) direct = !(before[k][i] && before[j][k]);
      if (direct) Race(i, j, before);
    }
  }
}

void SourceSetSearch::Race(size_t i, size_t j, const std::vector<std::vector<bool>>& before) {
  std::vector<PendingStep> v;
  for (size_t k = i + 1; k < j; ++k) {
    if (!before[k][i]) v.push_back({frames_[k].pick, frames_[k].footprint});
  }
  const PendingStep last{frames_[j].pick, frames_[j].footprint};
  Frame& at = frames_[i];
  if ((at.eligible & (1u << last.instance)) == 0) {
    // The instance could not move at that state (blocked on a lock): only a step of v on
    // what it waits for can let it move before i. Without one, the race is not reversible.
    bool freed = false;
    for (const PendingStep& step : v) {
      freed = freed || (step.instance != last.instance && !Independent(step.footprint, last.footprint));
    }
    if (!freed) return;
  }
  v.push_back(last);
  for (const std::vector<PendingStep>* list : {&at.asleep, &at.done}) {
    for (const PendingStep& q : *list) {
      if (WeakInitial(q, v)) return;  // a schedule equivalent to v's is explored from q's step
    }
  }
  Insert(at.wakeup, std::move(v));
}

void SourceSetSearch::Insert(std::vector<Node>& tree, std::vector<PendingStep> v) {
  for (Node& child : tree) {
    if (!WeakInitial(child.step, v)) continue;
    if (child.children.empty()) return;  // the branch already leads to a schedule like v's
    for (size_t m = 0; m < v.size(); ++m) {
      if (v[m].instance == child.step.instance) {
        v.erase(v.begin() + static_cast<std::ptrdiff_t>(m));
        break;
      }
    }
    if (v.empty()) return;
    Insert(child.children, std::move(v));
    return;
  }
  Node chain{v.back(), {}};
  for (size_t k = v.size() - 1; k-- > 0;) chain = Node{v[k], {std::move(chain)}};
  tree.push_back(std::move(chain));
}

bool SourceSetSearch::Next() {
  while (!frames_.empty()) {
    Frame& f = frames_.back();
    f.done.push_back({f.pick, f.footprint});
    f.guide.clear();
    const uint32_t open = f.eligible & ~Mask(f.asleep) & ~Mask(f.done);
    while (!f.wakeup.empty()) {
      Node node = std::move(f.wakeup.front());
      f.wakeup.erase(f.wakeup.begin());
      if ((open & (1u << node.step.instance)) == 0) {
        ++infeasible_;
        continue;
      }
      f.pick = node.step.instance;
      f.guide = std::move(node.children);
      return true;
    }
    frames_.pop_back();
  }
  return false;
}

}  // namespace dedupsim::explore
