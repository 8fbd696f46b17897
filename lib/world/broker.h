// A simulated message broker, small enough to read in one sitting: one queue of
// OrderPlaced messages with the delivery rules the lessons depend on.
//
//   At-least-once: Receive hands out the oldest available message and keeps it in flight
//   until it is settled. Ack removes it. Abandon (the consumer gave up, e.g. it threw) and
//   LoseAck (the consumer finished but the ack never arrived, or the consumer died: the
//   lock simply expires) both put it back at the head of the queue for redelivery, with the
//   same MessageId and a delivery count one higher.
//   Max delivery count: a message released after its max_delivery_count-th delivery goes to
//   the dead-letter queue instead (reason "MaxDeliveryCountExceeded"). A consumer can also
//   dead-letter a delivery itself, with its own reason.
//   Dead-letter replay: an operator resubmits dead letters; each is sent again as a new
//   message with the same MessageId (and so passes through duplicate detection).
//   Delivery tags and the redelivered flag (as RabbitMQ's): every Receive hands out a new
//   delivery tag, counting up from 1 per broker, so a redelivery of the same message gets a
//   new one. redelivered is set when this queue delivered the message before (delivery count
//   above 1); a producer's resend is a new message, delivered for the first time.
//   Send-side duplicate detection (optional): a Send whose MessageId was accepted less than
//   the window ago is dropped. It looks only at sends; a redelivery is not a send.
//
// Time comes from the injected Clock (a ManualClock in the retention and dedup lessons).
// Every step is noted on the recorder, when given, under the instance "broker", with its
// op, the MessageId and the delivery count; each delivery is offered to the next consumer
// connection opened (Recorder::OfferDelivery), so the broker numbers deliveries once. Not
// thread-safe: one thread drives the broker, and consumers in other threads or processes
// report back to it. Deterministic: the same calls give the same deliveries.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/message.h"
#include "trace/trace.h"

namespace dedupsim {

// Azure Service Bus's bound on its duplicate detection window, which the simulation keeps.
inline constexpr std::chrono::milliseconds kMaxDuplicateDetectionWindow = std::chrono::hours(24 * 7);

struct BrokerOptions {
  int max_delivery_count = 10;  // at least 1
  // 0: no duplicate detection; at most kMaxDuplicateDetectionWindow.
  std::chrono::milliseconds duplicate_detection_window{0};
};

struct Delivery {
  int64_t sequence_number = 0;  // given at Send; a resend or a replay gets a new one
  OrderPlaced message;
  int delivery_count = 0;  // 1 on the first delivery
  int64_t delivery_tag = 0;  // new on every delivery, from 1
  bool redelivered = false;  // this message was delivered before (delivery_count > 1)
};

enum class SendResult { kAccepted, kDuplicateDropped };

struct DeadLetter {
  Delivery delivery;
  std::string reason;  // "MaxDeliveryCountExceeded", or the consumer's own
  std::string description;
};

// Counters since the broker was made.
struct BrokerStats {
  int64_t sent = 0;        // Send calls, replays included
  int64_t accepted = 0;    // sends that entered the queue
  int64_t dropped = 0;     // sends dropped by duplicate detection
  int64_t deliveries = 0;  // Receive calls that handed out a message
  int64_t acked = 0;
  int64_t redelivered = 0;  // releases that put a message back (Abandon, LoseAck)
  int64_t dead_lettered = 0;
};

class Broker {
 public:
  // Throws std::invalid_argument for options out of range. clock and recorder (which may be
  // null) must outlive the broker.
  Broker(Clock& clock, BrokerOptions options, Recorder* recorder = nullptr);

  // Sends message. The send is recorded as the sender's step: the producer's unless sender
  // names another (its instance, pid and actor, as Session::StampTrace fills them: an
  // outbox's dispatcher, a consumer that sends from its handler).
  SendResult Send(const OrderPlaced& message, const TraceEvent* sender = nullptr);
  // The next message to deliver, now in flight; nullopt when the queue is empty.
  std::optional<Delivery> Receive();

  // Settling a delivery that is not in flight throws std::logic_error.
  void Ack(const Delivery& delivery);
  void Abandon(const Delivery& delivery);
  void LoseAck(const Delivery& delivery);
  void DeadLetterIt(const Delivery& delivery, const std::string& reason,
                    const std::string& description);

  // Sends every dead letter again (the operator's replay) and empties the dead-letter
  // queue. Returns how many were accepted.
  int64_t ReplayDeadLetters();

  const std::vector<DeadLetter>& dead_letters() const { return dead_letters_; }
  size_t queued() const { return queue_.size(); }
  size_t in_flight() const { return in_flight_.size(); }
  const BrokerStats& stats() const { return stats_; }
  const BrokerOptions& options() const { return options_; }

 private:
  Delivery TakeInFlight(const Delivery& delivery, const char* action);
  void Release(const Delivery& delivery, const char* why);
  // Records a broker step: op as in TraceEvent::op, about the message and delivery count of
  // `about` (0 for a send).
  void Note(const char* op, const Delivery& about, const std::string& detail,
            const std::string& result, const TraceEvent* sender = nullptr);
  void Settled();  // a delivery was settled: its offer to the next connection is withdrawn

  Clock& clock_;
  BrokerOptions options_;
  Recorder* recorder_;
  int64_t next_sequence_ = 1;
  int64_t next_delivery_tag_ = 1;
  std::deque<Delivery> queue_;
  std::map<int64_t, Delivery> in_flight_;
  std::vector<DeadLetter> dead_letters_;
  std::unordered_map<std::string, TimePoint> accepted_at_;  // MessageId -> last accepted send
  BrokerStats stats_;
};

// What a consumer did with one delivery, for Drain.
enum class Disposition {
  kAck,         // done, or a duplicate skipped: acknowledged
  kAbandon,     // the consumer gave up (threw): redeliver
  kAckLost,     // the consumer finished, the ack never reached the broker: redeliver
  kDeadLetter,  // the consumer dead-letters it (with Verdict's reason)
};

struct Verdict {
  Verdict(Disposition d = Disposition::kAck) : disposition(d) {}  // NOLINT: implicit on purpose
  Verdict(Disposition d, std::string why, std::string text)
      : disposition(d), reason(std::move(why)), description(std::move(text)) {}

  Disposition disposition;
  std::string reason;  // for kDeadLetter
  std::string description;
};

// Delivers until the queue is empty, settling each delivery as handler decides. Returns
// the number of deliveries made. A message that is released again and again ends in the
// dead-letter queue after max_delivery_count deliveries, so Drain always ends.
int64_t Drain(Broker& broker, const std::function<Verdict(const Delivery&)>& handler);

}  // namespace dedupsim
