#include "progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace dedupsim::cli {

TerminalProgress::TerminalProgress()
    : enabled_(::isatty(STDERR_FILENO) == 1), created_(std::chrono::steady_clock::now()) {}

void TerminalProgress::Start(std::string label, int64_t total) {
  Clear();
  label_ = std::move(label);
  total_ = total;
}

void TerminalProgress::Show(int64_t done) {
  if (!enabled_ || std::chrono::steady_clock::now() - created_ < std::chrono::seconds(1)) return;
  int64_t percent = total_ > 0 ? done * 100 / total_ : 0;
  fmt::print(stderr, "\r\033[K{} {}/{} ({}%)", label_, done, total_, percent);
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
