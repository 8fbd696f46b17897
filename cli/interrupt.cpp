#include "interrupt.h"

#include <signal.h>

#include <csignal>

namespace dedupsim::cli {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;  // written by the handler only

extern "C" void OnInterrupt(int) { g_interrupted = 1; }

}  // namespace

void CatchInterrupts() {
  struct sigaction action {};
  action.sa_handler = OnInterrupt;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool Interrupted() { return g_interrupted != 0; }

}  // namespace dedupsim::cli
