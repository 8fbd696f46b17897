// A one-line progress display on stderr, for runs that take a while: shown only when
// stderr is a terminal and the current step has run for over a second, and erased when
// the step ends, so piped or redirected output never carries it.
#pragma once

#include <chrono>
#include <string>

namespace dedupsim::cli {

class TerminalProgress {
 public:
  TerminalProgress();
  // Starts a new step; nothing is shown yet.
  void Start(std::string label, int64_t total);
  // Shows "label done/total (pct%)" once the step has run for over a second.
  void Show(int64_t done, std::chrono::nanoseconds elapsed);
  // Erases the line if one was shown.
  void Clear();
  bool enabled() const { return enabled_; }

 private:
  bool enabled_;
  bool shown_ = false;
  std::string label_;
  int64_t total_ = 0;
};

}  // namespace dedupsim::cli
