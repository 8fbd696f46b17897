// A private, throwaway NATS server for one dedupsim command (or one test run): nats-server
// with JetStream, listening on 127.0.0.1 only, on a port the kernel chose (read back from
// the server's ports file), its store in a new folder $TMPDIR/dedupsim-nats-XXXXXX. About
// 0.1 s to start.
//
// The server is stopped (SIGTERM, then SIGKILL) and the folder removed when the object is
// destroyed, also on errors and after Ctrl-C (registered with run_files for the interrupt
// thread). It has its own process group and a parent-death signal: if dedupsim is killed
// the server goes down too; only the folder is then left.
#pragma once

#include <sys/types.h>

#include <string>

namespace dedupsim {

class NatsServer {
 public:
  // Throws BrokerError (naming the program or its log) when nats-server is missing or does
  // not come up. The program: $DEDUPSIM_NATS_SERVER, else nats-server found on PATH,
  // /usr/sbin or /usr/bin.
  static NatsServer Start();
  ~NatsServer();
  NatsServer(NatsServer&& other) noexcept;
  NatsServer& operator=(NatsServer&&) = delete;
  NatsServer(const NatsServer&) = delete;
  NatsServer& operator=(const NatsServer&) = delete;

  // "nats://127.0.0.1:<port>".
  const std::string& url() const { return url_; }
  const std::string& folder() const { return folder_; }
  pid_t pid() const { return pid_; }

  // Stops the server and removes the folder now; safe to call twice.
  void Stop() noexcept;

 private:
  NatsServer() = default;
  std::string folder_;
  std::string url_;
  pid_t pid_ = -1;
};

}  // namespace dedupsim
