// The soak's durable broker (store/durable_queue.h's BrokerQueue) on NATS JetStream: one stream of
// the workload's deliveries with one durable pull consumer that every consumer process
// shares. The lease is the consumer's AckWait: a delivery a SIGKILLed consumer took comes
// back once it passes; an ack is synchronous (the server's answer read); nothing is ever
// given up (MaxDeliver unlimited). The counts are the server's: the stream's messages, the
// consumer's delivered sequence (every delivery), what is still pending or unacked.
//
// cnats runs threads: a process that forks consumers must not have used it before its last
// fork. The soak sets the stream up in a child of its own and reads the counts once every
// consumer is gone; each consumer connects after fork.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/message.h"
#include "store/durable_queue.h"

namespace dedupsim {

// Creates the stream and consumer `name` (marked as dedupsim's; a stream of that name
// without the mark is refused, BrokerError) anew, and publishes every message in order.
void SetUpNatsSoakStream(const std::string& url, const std::string& name,
                         std::chrono::milliseconds lease, const std::vector<OrderPlaced>& messages);

// What the server says after a run: entries (the stream's messages), deliveries (the
// consumer's delivered sequence), redeliveries (deliveries beyond one per entry), acked
// (entries neither pending nor waiting for an ack). acked_processed and acked_skipped are
// not the server's to know: left 0.
BrokerCounts ReadNatsSoakCounts(const std::string& url, const std::string& name);

// Deletes the stream (ours: marked). Never throws.
void DeleteNatsSoakStream(const std::string& url, const std::string& name) noexcept;

class NatsSoakQueue final : public BrokerQueue {
 public:
  // Connects and binds to the consumer; throws BrokerError.
  NatsSoakQueue(const std::string& url, const std::string& name);
  ~NatsSoakQueue() override;

  std::optional<LeasedDelivery> Receive() override;
  bool Ack(const LeasedDelivery& delivery, bool processed) override;
  bool AllAcked() override;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace dedupsim
