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

}  // namespace dedupsim::explore
