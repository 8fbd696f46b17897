#include "os/pause_point.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace dedupsim {

namespace {

[[maybe_unused]] bool Announce(const char* name) {
  const char* at = std::getenv("DEDUPSIM_PAUSE_AT");
  if (at == nullptr) return false;
  const std::string list = std::string(",") + at + ",";
  if (list.find(std::string(",") + name + ",") == std::string::npos) return false;
  std::string line = fmt::format("dedupsim: paused at {} pid {}\n", name, ::getpid());
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
  return true;
}

}  // namespace

#ifdef DEDUPSIM_PAUSE_POINTS
void PauseHere(const char* name) {
  if (!Announce(name)) return;
  for (;;) ::pause();
}

void StopHere(const char* name) {
  if (Announce(name)) ::raise(SIGSTOP);
}

long TestOnlySetting(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr) return 0;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  return end != text && *end == '\0' && value > 0 ? value : 0;
}
#else
void PauseHere(const char*) {}
void StopHere(const char*) {}
long TestOnlySetting(const char*) { return 0; }
#endif

}  // namespace dedupsim
