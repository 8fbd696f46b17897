#include "world/broker/broker_setup.h"

#include <optional>
#include <stdexcept>

#include "world/broker/nats_broker.h"
#include "world/broker/nats_library.h"
#include "world/broker/nats_server.h"
#include "world/broker/amqp_library.h"
#include "world/broker/rabbitmq_broker.h"
#include "world/broker/rabbitmq_node.h"
#include "os/pause_point.h"

namespace dedupsim {

namespace {

class SimulatedSetup final : public BrokerSetup {
 public:
  const BrokerFactory& brokers() const override { return SimulatedBrokers(); }
  std::string server() const override { return "simulated"; }
  std::string url() const override { return ""; }
};

class NatsSetup final : public BrokerSetup {
 public:
  NatsSetup(const std::string& url, const std::string& prefix) {
    RequireNatsLibrary();  // before a server is started for a command that could not talk to it
    if (url.empty()) {
      private_.emplace(NatsServer::Start());
      PauseHere("broker-server-started");  // the test build: an interrupt here must stop it
    }
    url_ = url.empty() ? private_->url() : url;
    brokers_.emplace(url_, prefix);
  }
  ~NatsSetup() override {
    brokers_.reset();  // the connection closes before the server stops
  }
  const BrokerFactory& brokers() const override { return *brokers_; }
  std::string server() const override { return brokers_->server(); }
  std::string url() const override { return url_; }

 private:
  std::optional<NatsServer> private_;
  std::string url_;
  std::optional<NatsBrokers> brokers_;
};

class RabbitSetup final : public BrokerSetup {
 public:
  RabbitSetup(const std::string& url, const std::string& prefix) {
    RequireAmqpLibrary();  // before a node is started for a command that could not talk to it
    if (url.empty()) {
      private_.emplace(RabbitNode::Start());
      PauseHere("broker-server-started");  // the test build: an interrupt here must stop it
    }
    url_ = url.empty() ? private_->url() : url;
    brokers_.emplace(url_, prefix);
  }
  ~RabbitSetup() override {
    brokers_.reset();  // the connection closes before the node stops
  }
  const BrokerFactory& brokers() const override { return *brokers_; }
  std::string server() const override { return brokers_->server(); }
  std::string url() const override { return url_; }

 private:
  std::optional<RabbitNode> private_;
  std::string url_;
  std::optional<RabbitBrokers> brokers_;
};

}  // namespace

std::unique_ptr<BrokerSetup> BrokerSetup::Start(BrokerKind kind, const std::string& url,
                                                const std::string& prefix) {
  switch (kind) {
    case BrokerKind::kSimulated:
      return std::make_unique<SimulatedSetup>();
    case BrokerKind::kNats:
      return std::make_unique<NatsSetup>(url, prefix);
    case BrokerKind::kRabbitMq:
      return std::make_unique<RabbitSetup>(url, prefix);
  }
  throw std::logic_error("unknown broker kind");
}

}  // namespace dedupsim
