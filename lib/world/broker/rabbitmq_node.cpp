#include "world/broker/rabbitmq_node.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <thread>

#include "world/broker/broker.h"
#include "world/broker/server_process.h"
#include "os/run_files.h"

namespace dedupsim {

namespace {

using SteadyClock = std::chrono::steady_clock;

std::string Program(const char* env, const std::string& fallback) {
  const char* set = std::getenv(env);
  return set != nullptr && *set != '\0' ? set : fallback;
}

// Stops the node (its script stops it in order on SIGTERM), then epmd; removes the folder.
void StopAll(pid_t server, pid_t epmd, const std::string& folder) noexcept {
  broker_server::Stop(server, SIGTERM, std::chrono::seconds(30));
  broker_server::Stop(epmd, SIGTERM, std::chrono::seconds(5));
  broker_server::RemoveFolder(folder);
}

}  // namespace

RabbitNode RabbitNode::Start() {
  const std::string script =
      Program("DEDUPSIM_RABBITMQ_SERVER", "/usr/lib/rabbitmq/bin/rabbitmq-server");
  const std::string epmd = Program("DEDUPSIM_EPMD", "/usr/bin/epmd");
  for (const std::string& p : {script, epmd}) {
    if (::access(p.c_str(), X_OK) != 0) {
      throw BrokerError(fmt::format(
          "--broker rabbitmq needs {}, which is missing (install the rabbitmq-server package: sh "
          "tools/setup.sh --tests), or give --broker-url",
          p));
    }
  }
  RabbitNode node;
  node.folder_ = broker_server::MakeFolder("rabbitmq");
  run_files::RegisterCleanup(node.folder_, [folder = node.folder_] {
    broker_server::RemoveFolder(folder);
  });
  const int amqp_port = broker_server::FreePort();
  const int dist_port = broker_server::FreePort();
  const int epmd_port = broker_server::FreePort();
  std::random_device device;
  node.node_ = fmt::format("dedupsim-{}-{}@localhost", static_cast<int>(::getpid()), device() % 100000);
  const std::string& f = node.folder_;
  std::ofstream(f + "/rabbitmq.conf") << fmt::format(
      "listeners.tcp.1 = 127.0.0.1:{}\n"
      "# the guest user, on loopback only (RabbitMQ's default)\n"
      "loopback_users.guest = true\n",
      amqp_port);
  std::ofstream(f + "/enabled_plugins") << "[].\n";
  const std::string log = f + "/server.log";

  broker_server::Spawn epmd_spawn;
  epmd_spawn.argv = {epmd, "-port", std::to_string(epmd_port), "-address", "127.0.0.1"};
  epmd_spawn.log = log;
  node.epmd_ = broker_server::Start(epmd_spawn);
  run_files::ForgetCleanup(node.folder_);
  run_files::RegisterCleanup(node.folder_, [epmd_pid = node.epmd_, folder = node.folder_] {
    StopAll(-1, epmd_pid, folder);
  });
  const std::string path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "/usr/bin:/bin";
  broker_server::Spawn spawn;
  spawn.argv = {script};
  spawn.environment = {"PATH=" + path, "HOME=" + f, "LANG=C.UTF-8",
                       "ERL_EPMD_PORT=" + std::to_string(epmd_port),
                       "RABBITMQ_NODENAME=" + node.node_,
                       "RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
                       "RABBITMQ_NODE_PORT=" + std::to_string(amqp_port),
                       "RABBITMQ_DIST_PORT=" + std::to_string(dist_port),
                       "RABBITMQ_MNESIA_BASE=" + f + "/mnesia",
                       "RABBITMQ_LOG_BASE=" + f + "/log",
                       "RABBITMQ_CONFIG_FILE=" + f + "/rabbitmq",
                       "RABBITMQ_ENABLED_PLUGINS_FILE=" + f + "/enabled_plugins",
                       "RABBITMQ_PLUGINS_EXPAND_DIR=" + f + "/plugins-expand",
                       "RABBITMQ_PID_FILE=" + f + "/node.pid",
                       "RABBITMQ_CONF_ENV_FILE=/dev/null"};
  spawn.replace_environment = true;
  spawn.log = log;
  spawn.working_folder = f;
  node.server_ = broker_server::Start(spawn);
  run_files::ForgetCleanup(node.folder_);
  run_files::RegisterCleanup(node.folder_,
                             [server = node.server_, epmd_pid = node.epmd_, folder = node.folder_] {
                               StopAll(server, epmd_pid, folder);
                             });
  node.url_ = fmt::format("amqp://guest:guest@127.0.0.1:{}", amqp_port);  // vhost "/"
  // The AMQP listener opens once the node has booted.
  const auto deadline = SteadyClock::now() + std::chrono::minutes(2);
  for (;;) {
    if (broker_server::Listening(amqp_port)) break;
    int status = 0;
    if (broker_server::Ended(node.server_, &status)) {
      node.server_ = -1;
      throw BrokerError(fmt::format("the RabbitMQ node ({}) stopped while starting: {}", script,
                                    broker_server::Tail(log, 3)));
    }
    if (SteadyClock::now() > deadline) {
      throw BrokerError(fmt::format("the RabbitMQ node ({}) did not start within 2 minutes: {}",
                                    script, broker_server::Tail(log, 3)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return node;
}

RabbitNode::RabbitNode(RabbitNode&& other) noexcept
    : folder_(std::move(other.folder_)),
      url_(std::move(other.url_)),
      node_(std::move(other.node_)),
      epmd_(other.epmd_),
      server_(other.server_) {
  other.folder_.clear();
  other.epmd_ = -1;
  other.server_ = -1;
}

RabbitNode::~RabbitNode() { Stop(); }

void RabbitNode::Stop() noexcept {
  if (!folder_.empty()) run_files::ForgetCleanup(folder_);
  StopAll(server_, epmd_, folder_);
  server_ = -1;
  epmd_ = -1;
  folder_.clear();
}

}  // namespace dedupsim
