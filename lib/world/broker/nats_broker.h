// The broker seam (broker.h) on NATS JetStream, through cnats (libnats, loaded on first use:
// nats_library.cpp). Each Broker is a stream of its own with one durable pull consumer:
//
//   Send publishes the message as JSON to the stream's subject, with the header Nats-Msg-Id
//   when the broker has a duplicate window (the stream's Duplicates); the publish ack's
//   duplicate flag is SendResult::kDuplicateDropped.
//   Receive fetches one message: delivery_count is the server's num_delivered, delivery_tag
//   the consumer sequence (new on every delivery), sequence_number the stream sequence;
//   NATS has no redelivered flag, so redelivered is num_delivered > 1. Receive waits while
//   the server holds a delivery that is not acked (its AckWait runs) and returns nullopt
//   once the consumer has nothing pending and nothing waiting for an ack.
//   Ack is a synchronous ack (the server's answer is read: a late ack, after AckWait, is
//   accepted). Abandon is a Nak (redelivered at once); LoseAck sends nothing, and the server
//   redelivers once AckWait has passed. DeadLetterIt terminates the delivery (AckTerm) and
//   publishes the message to the broker's dead-letter stream with the reason as a header.
//   After MaxDeliver deliveries the server stops delivering the message without a dead
//   letter and emits a MAX_DELIVERIES advisory, which the broker reads (stats().gave_up).
//
// Streams and consumers are dedupsim's: named "<prefix>-<pid>-<n>" and marked by their
// description; a stream of that name without the mark is refused (BrokerError), never
// changed. A broker deletes its own streams when it is destroyed.
#pragma once

#include <memory>
#include <string>

#include "world/broker/broker.h"

namespace dedupsim {

// The mark on every stream and consumer dedupsim creates.
inline constexpr const char* kNatsMark = "dedupsim: created by dedupsim, which may delete it";

class NatsBrokers final : public BrokerFactory {
 public:
  // Connects to url ("nats://host:port"); throws BrokerError when the server cannot be
  // reached, has no JetStream, or libnats cannot be loaded.
  explicit NatsBrokers(const std::string& url, std::string prefix = "dedupsim");
  ~NatsBrokers() override;

  BrokerKind kind() const override { return BrokerKind::kNats; }
  std::unique_ptr<Broker> Open(Clock& clock, const BrokerOptions& options,
                               Recorder* recorder) const override;
  // "NATS JetStream 2.9.10": the version the server announced.
  const std::string& server() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace dedupsim
