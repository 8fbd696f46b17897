// A private, throwaway RabbitMQ node for one dedupsim command (or one test run): Debian's
// rabbitmq-server, with a node name of its own (dedupsim-<pid>-<n>@localhost), its own
// epmd (ERL_EPMD_PORT, started by us, not as a daemon), its own AMQP and distribution ports
// on 127.0.0.1 and its data and logs in a new folder $TMPDIR/dedupsim-rabbitmq-XXXXXX, no
// plugins. Starting takes 12 to 17 s (an Erlang node: docs/brokers.md).
//
// The node and epmd are stopped (SIGTERM: rabbitmq-server's script stops the node in order,
// then SIGKILL) and the folder removed when the object is destroyed, also on errors and
// after Ctrl-C (registered with run_files for the interrupt thread). Each has its own
// process group and a parent-death signal: if dedupsim is killed they stop too; only the
// folder is then left. Debian's system node (rabbitmq-server.service) is never touched.
#pragma once

#include <sys/types.h>

#include <string>

namespace dedupsim {

class RabbitNode {
 public:
  // Throws BrokerError (naming the program or its log) when rabbitmq-server or epmd is
  // missing or the node does not come up within two minutes. The programs:
  // $DEDUPSIM_RABBITMQ_SERVER (default /usr/lib/rabbitmq/bin/rabbitmq-server) and epmd.
  static RabbitNode Start();
  ~RabbitNode();
  RabbitNode(RabbitNode&& other) noexcept;
  RabbitNode& operator=(RabbitNode&&) = delete;
  RabbitNode(const RabbitNode&) = delete;
  RabbitNode& operator=(const RabbitNode&) = delete;

  // "amqp://guest:guest@127.0.0.1:<port>" (the default vhost, "/").
  const std::string& url() const { return url_; }
  const std::string& folder() const { return folder_; }
  const std::string& node_name() const { return node_; }

  // Stops the node and epmd and removes the folder now; safe to call twice.
  void Stop() noexcept;

 private:
  RabbitNode() = default;
  std::string folder_;
  std::string url_;
  std::string node_;
  pid_t epmd_ = -1;
  pid_t server_ = -1;
};

}  // namespace dedupsim
