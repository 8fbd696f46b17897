// The broker seam (broker.h) on RabbitMQ, through rabbitmq-c (librabbitmq, loaded on first
// use: amqp_library.cpp). Each Broker is a quorum queue of its own, with a delivery limit
// and a dead-letter queue, on one AMQP connection with a producer channel (publisher
// confirms) and a consumer channel:
//
//   Send publishes the message as JSON with its MessageId as the AMQP message-id, and waits
//   for the broker's confirm; its header "dedupsim-publish" carries the publish's number
//   (the producer channel's confirm sequence), which RabbitMQ keeps with the message, so a
//   delivery or dead letter says which stored copy it is (sequence_number: Broker::CopyOf).
//   RabbitMQ has no send-side duplicate detection: a broker with a duplicate window is
//   refused (std::invalid_argument).
//   Receive is a basic.get: redelivered is the broker's redelivered flag, delivery_tag the
//   channel's delivery tag (1 again on a new channel), delivery_count the quorum queue's
//   x-delivery-count header plus one (3.10 sets it from the first delivery; absent: 1).
//   Ack is a basic.ack on the channel the delivery came on (false when that channel is
//   gone). Abandon is a basic.nack with requeue. LoseAck closes the consumer channel, as a
//   consumer's connection drops, and opens a new one: the broker requeues what the channel
//   held, redelivered at once. DeadLetterIt is a basic.reject without requeue: the queue's
//   dead-letter exchange routes it to the dead-letter queue, as it does a message past the
//   delivery limit (x-delivery-limit = max_delivery_count - 1); none of these gets a reply
//   ("sent (no reply)"). dead_letters() is read back from that queue (its
//   x-first-death-reason: "rejected", "delivery_limit"), each numbered by the last delivery
//   of it this client settled before the queue dead-lettered it (0: none).
//
// Queues are dedupsim's: "<prefix>-<pid>-<n>" and "<prefix>-<pid>-<n>-dead", declared with
// dedupsim's dead-letter exchange "<prefix>.dead-letters" as an argument, which RabbitMQ
// compares on every declare: a queue of that name declared otherwise is refused
// (PRECONDITION_FAILED: BrokerError), never changed. A broker deletes its queues when it is
// destroyed.
#pragma once

#include <memory>
#include <string>

#include "world/broker/broker.h"

namespace dedupsim {

class RabbitBrokers final : public BrokerFactory {
 public:
  // Connects to url ("amqp://user:password@host:port/vhost"); throws BrokerError when the
  // server cannot be reached or librabbitmq cannot be loaded.
  explicit RabbitBrokers(const std::string& url, std::string prefix = "dedupsim");
  ~RabbitBrokers() override;

  BrokerKind kind() const override { return BrokerKind::kRabbitMq; }
  std::unique_ptr<Broker> Open(Clock& clock, const BrokerOptions& options,
                               Recorder* recorder) const override;
  // "RabbitMQ 3.10.8": the version the server announced.
  const std::string& server() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace dedupsim
