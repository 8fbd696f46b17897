// The broker a command runs on, chosen by --broker and --broker-url: the simulation, a
// server the user runs (url), or, without a url, a private server started for the command
// (nats_server.h, rabbitmq_node.h) and stopped when the setup is destroyed.
#pragma once

#include <memory>
#include <string>

#include "world/broker/broker.h"

namespace dedupsim {

class BrokerSetup {
 public:
  // Starts what kind needs. url: a server the user runs ("nats://host:port",
  // "amqp://user:password@host:port/vhost"); "" for a private one. prefix names the streams
  // and queues dedupsim creates there. Throws BrokerError when the server cannot be started
  // or reached, or its client library cannot be loaded.
  static std::unique_ptr<BrokerSetup> Start(BrokerKind kind, const std::string& url,
                                            const std::string& prefix = "dedupsim");
  virtual ~BrokerSetup() = default;

  virtual const BrokerFactory& brokers() const = 0;
  // What answered: "simulated", "NATS JetStream 2.9.10", "RabbitMQ 3.10.8".
  virtual std::string server() const = 0;
  // The url lessons' consumers connect to ("" for the simulation).
  virtual std::string url() const = 0;
};

}  // namespace dedupsim
