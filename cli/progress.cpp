#include "progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace dedupsim::cli {

namespace {
constexpr int kBarWidth = 24;
}  // namespace

std::string ProgressLine(const std::string& label, int64_t done, int64_t total, int64_t counted,
                         const std::string& unit, double seconds) {
  std::string line = label;
  if (total > 0) {
    const int64_t filled = std::min<int64_t>(kBarWidth, done * kBarWidth / total);
    line += fmt::format(" [{}{}] {}/{}", std::string(static_cast<size_t>(filled), '#'),
                        std::string(static_cast<size_t>(kBarWidth - filled), '.'), done, total);
  } else {
    line += fmt::format(" {}", done);
  }
  const std::string what = unit.empty() ? "" : " " + unit;
  if (counted != done) line += fmt::format(", {}{}", counted, what);
  if (seconds > 0) {
    line += fmt::format(", {:.0f}{}/s", static_cast<double>(counted) / seconds, what);
  }
  return line;
}

namespace {

std::chrono::milliseconds ShowAfter() {
  const char* text = std::getenv("DEDUPSIM_TEST_PROGRESS_AFTER_MS");
  if (text == nullptr || *text == '\0') return std::chrono::seconds(1);
  return std::chrono::milliseconds(std::strtol(text, nullptr, 10));
}

}  // namespace

TerminalProgress::TerminalProgress(bool wanted)
    : enabled_(wanted && ::isatty(STDERR_FILENO) == 1),
      after_(ShowAfter()),
      created_(std::chrono::steady_clock::now()),
      started_(created_) {}

void TerminalProgress::Start(std::string label, int64_t total, std::string unit) {
  Clear();
  label_ = std::move(label);
  unit_ = std::move(unit);
  total_ = total;
  started_ = std::chrono::steady_clock::now();
}

void TerminalProgress::Show(int64_t done, int64_t counted) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - created_ < after_) return;
  // At most ten lines a second, and always the last one of a step.
  if (shown_ && now - drawn_ < std::chrono::milliseconds(100) && done != total_) return;
  drawn_ = now;
  const double seconds = std::chrono::duration<double>(now - started_).count();
  fmt::print(stderr, "\r\033[K{}", ProgressLine(label_, done, total_, counted, unit_, seconds));
  std::fflush(stderr);
  shown_ = true;
}

void TerminalProgress::Clear() {
  if (!shown_) return;
  fmt::print(stderr, "\r\033[K");
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace dedupsim::cli
