// A one-line progress display on stderr, for runs that take a while: shown only when
// stderr is a terminal and the run has taken over a second (counted from construction),
// and erased when each step ends, so piped or redirected output never carries it.
#pragma once

#include <chrono>
#include <string>

namespace dedupsim::cli {

class TerminalProgress {
 public:
  TerminalProgress();
  // Starts a new step; nothing is shown yet.
  void Start(std::string label, int64_t total);
  // Shows "label done/total (pct%)" once the run has taken over a second.
  void Show(int64_t done);
  // Erases the line if one was shown.
  void Clear();
  bool enabled() const { return enabled_; }

 private:
  bool enabled_;
  std::chrono::steady_clock::time_point created_;
  bool shown_ = false;
  std::string label_;
  int64_t total_ = 0;
};

}  // namespace dedupsim::cli
