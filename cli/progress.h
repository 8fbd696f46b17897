// A one-line progress display on stderr, for runs that take a while: a bar with the counts
// and the rate, shown only when stderr is a terminal, the output is not JSON (the caller
// says), and the run has taken over a second (counted from construction); erased when each
// step ends, so piped or redirected output never carries it. (Tests set
// DEDUPSIM_TEST_PROGRESS_AFTER_MS to see it without a second's work.)
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace dedupsim::cli {

class TerminalProgress {
 public:
  // wanted: false for --format json (nothing is ever shown then).
  explicit TerminalProgress(bool wanted = true);
  // Starts a new step; nothing is shown yet. total 0: not known (no bar). unit names what
  // the rate counts ("schedules", "messages").
  void Start(std::string label, int64_t total, std::string unit = "");
  // "label [#####.....] done/total, N unit/s": the rate is of done since Start.
  void Show(int64_t done) { Show(done, done); }
  // The same, with the rate (and a count) of counted instead: "..., counted unit, N unit/s".
  void Show(int64_t done, int64_t counted);
  // Erases the line if one was shown.
  void Clear();
  bool enabled() const { return enabled_; }

 private:
  bool enabled_;
  std::chrono::milliseconds after_;  // shown once the run has taken this long
  std::chrono::steady_clock::time_point created_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point drawn_{};
  bool shown_ = false;
  std::string label_;
  std::string unit_;
  int64_t total_ = 0;
};

// The line TerminalProgress draws (without the carriage return), for tests.
std::string ProgressLine(const std::string& label, int64_t done, int64_t total, int64_t counted,
                         const std::string& unit, double seconds);

}  // namespace dedupsim::cli
