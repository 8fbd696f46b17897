// A broker server run by dedupsim as its child (nats-server, a RabbitMQ node and its epmd):
// the pieces NatsServer and RabbitNode share. Each server gets a folder of its own in the
// temporary directory ($TMPDIR, else /tmp), its own process group (the terminal's Ctrl-C
// reaches only dedupsim, which then stops it in order) and a parent-death signal (it goes
// down if dedupsim is killed); stdin is /dev/null, stdout and stderr go to a log in its
// folder. Only async-signal-safe calls run between fork and exec.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace dedupsim::broker_server {

struct Spawn {
  std::vector<std::string> argv;  // argv[0]: the program's path
  // "NAME=value" entries: the whole environment when replace_environment, else added to ours.
  std::vector<std::string> environment;
  bool replace_environment = false;
  std::string log;  // appended to
  std::string working_folder;  // "" : ours
  int death_signal = 15;       // SIGTERM: a graceful stop when dedupsim dies
  // In the parent, as the child is forked, under the interrupt registry's lock
  // (run_files::ForkUnderLock): records the pid where the registered cleanup reads it, so
  // no interrupt falls between the fork and the record. Only records (no run_files call).
  std::function<void(pid_t)> record;
};

// Starts the program; throws ProcessError (os/process_error.h: exit 4) when fork fails. A
// program that cannot be run exits 127 (its log says nothing): the caller sees it end.
pid_t Start(const Spawn& spawn);

// True (and the status) when pid has ended; reaps it.
bool Ended(pid_t pid, int* status);

// Sends signal to the server's process group, waits up to grace for pid to end, then
// SIGKILLs the group and reaps pid. Never throws.
void Stop(pid_t pid, int signal, std::chrono::milliseconds grace) noexcept;

// A new folder "$TMPDIR/dedupsim-<what>-XXXXXX"; throws BrokerError.
std::string MakeFolder(const std::string& what);
// Removes folder and everything in it; never throws.
void RemoveFolder(const std::string& folder) noexcept;

// The last lines of a log, joined with " | ", for an error message.
std::string Tail(const std::string& path, size_t lines);

// A TCP port on 127.0.0.1 that nothing listens on now (the kernel's choice).
int FreePort();
// Whether something accepts connections on 127.0.0.1:port.
bool Listening(int port);

}  // namespace dedupsim::broker_server
