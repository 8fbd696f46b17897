// The simulated broker, small enough to read in one sitting: one in-memory queue of
// OrderPlaced messages with the delivery rules the lessons depend on. The default broker
// (--broker sim), and what the explorer models; docs/brokers.md sets it beside NATS
// JetStream and RabbitMQ as measured.
//
//   At-least-once: Receive hands out the oldest available message and keeps it in flight
//   until it is settled. Ack removes it. Abandon and LoseAck both put it back at the head
//   of the queue at once (a real broker waits for its ack timer or the channel's close),
//   with the same MessageId and a delivery count one higher.
//   Max delivery count: a message released after its max_delivery_count-th delivery goes to
//   the dead-letter queue instead (reason "MaxDeliveryCountExceeded").
//   Dead-letter replay: each dead letter is sent again as a new message with the same
//   MessageId (and so passes through duplicate detection).
//   Delivery tags and the redelivered flag: every Receive hands out a new delivery tag,
//   counting up from 1 per broker; redelivered is set when the message was delivered before.
//   Ack deadline (optional, expire_unacked): a delivery not settled ack_wait after it went out
//   is put back and redelivered, while its consumer may still work on it; that consumer's
//   late ack is taken and counts the message done (as NATS JetStream 2.9.10 does).
//   Send-side duplicate detection (optional): a Send whose MessageId was accepted less than
//   the window ago is dropped. It looks only at sends; a redelivery is not a send.
//
// Time comes from the injected Clock (a ManualClock in the retention and dedup lessons).
// Deterministic: the same calls give the same deliveries.
#pragma once

#include <deque>
#include <map>
#include <set>
#include <unordered_map>

#include "world/broker/broker.h"

namespace dedupsim {

class SimulatedBroker final : public Broker {
 public:
  // Throws std::invalid_argument for options out of range. clock and recorder (which may be
  // null) must outlive the broker.
  SimulatedBroker(Clock& clock, BrokerOptions options, Recorder* recorder = nullptr);

  BrokerKind kind() const override { return BrokerKind::kSimulated; }
  std::string server() const override { return "simulated"; }
  SendResult Send(const OrderPlaced& message) override;
  std::optional<Delivery> Receive() override;
  bool Ack(const Delivery& delivery) override;
  void Abandon(const Delivery& delivery) override;
  void LoseAck(const Delivery& delivery) override;
  void DeadLetterIt(const Delivery& delivery, const std::string& reason,
                    const std::string& description) override;
  int64_t ReplayDeadLetters() override;

  const std::vector<DeadLetter>& dead_letters() const override { return dead_letters_; }
  const BrokerStats& stats() const override { return stats_; }
  const BrokerOptions& options() const override { return options_; }
  size_t queued() const { return queue_.size(); }
  size_t in_flight() const { return in_flight_.size(); }

 private:
  Delivery TakeInFlight(const Delivery& delivery, const char* action);
  // expire_unacked: puts back every delivery in flight for ack_wait or longer.
  void ExpireUnacked();
  void Release(const Delivery& delivery, const char* why);

  Clock& clock_;
  BrokerOptions options_;
  int64_t next_sequence_ = 1;
  int64_t next_delivery_tag_ = 1;
  std::deque<Delivery> queue_;
  std::map<int64_t, Delivery> in_flight_;
  std::map<int64_t, TimePoint> delivered_at_;  // sequence -> when its delivery went out
  std::map<int64_t, int> expired_;             // sequence -> the delivery whose wait passed
  std::set<int64_t> settled_late_;             // sequences a late ack counted done
  std::vector<DeadLetter> dead_letters_;
  std::unordered_map<std::string, TimePoint> accepted_at_;  // MessageId -> last accepted send
  BrokerStats stats_;
};

}  // namespace dedupsim
