// The broker seam: what a lesson, the soak and the bench may ask of a message broker, with
// three implementations behind it: the simulation (simulated_broker.h: the default, fast,
// deterministic, what the explorer models), NATS JetStream (nats_broker.h) and RabbitMQ
// (rabbitmq_broker.h). A Broker is one queue of OrderPlaced messages on one broker, as one
// producer and one consumer connection use it.
//
//   Send publishes a message with its MessageId; a broker with send-side duplicate detection
//   may drop it (SendResult::kDuplicateDropped, as the broker answered).
//   Receive hands out the next delivery with what the broker says about it: how many times
//   it delivered the message (delivery_count), whether it says it redelivered it
//   (redelivered) and its delivery tag, a value of the delivery, never of the message.
//   Ack settles it. Abandon gives it back at once (the consumer gave up). LoseAck is the ack
//   that never arrives: the consumer finished, or died, and the broker hears nothing; it
//   redelivers when it notices (the simulation at once, NATS once AckWait has passed,
//   RabbitMQ when the consumer's channel closes). DeadLetterIt moves it aside with a reason.
//
// Each step is recorded on the recorder (when given) under the instance "broker", with its
// op, the MessageId and the delivery count (a send as its sender's step, the producer's
// unless SendAs names another; a replay as the operator's); each delivery is offered to the next consumer
// connection opened (Recorder::OfferDelivery), so the broker numbers deliveries once.
// Not thread-safe: one thread drives a Broker.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/message.h"
#include "store/error.h"
#include "trace/trace.h"

namespace dedupsim {

// A broker that cannot be used: not reachable, its client library missing, a stream or
// queue of dedupsim's name that dedupsim did not create. The CLI maps it to exit 3, as a
// database that cannot be used.
class BrokerError : public DatabaseError {
 public:
  using DatabaseError::DatabaseError;
};

enum class BrokerKind { kSimulated, kNats, kRabbitMq };
// "sim", "nats", "rabbitmq": the --broker words.
std::string_view ToString(BrokerKind kind);
std::optional<BrokerKind> ParseBrokerKind(std::string_view word);

// Azure Service Bus's bound on its duplicate detection window, which the simulation keeps.
inline constexpr std::chrono::milliseconds kMaxDuplicateDetectionWindow = std::chrono::hours(24 * 7);

struct BrokerOptions {
  int max_delivery_count = 10;  // at least 1
  // 0: no duplicate detection; at most kMaxDuplicateDetectionWindow.
  std::chrono::milliseconds duplicate_detection_window{0};
  // A real broker's redelivery timer: how long a delivery nobody acks stays with its
  // consumer before the broker offers it again (NATS AckWait). The simulation redelivers
  // at once; RabbitMQ when the consumer's channel closes.
  std::chrono::milliseconds ack_wait{200};
  // The simulation only: model that timer too (a delivery not settled ack_wait after it was
  // handed out, by the injected clock, is redelivered; its late ack is taken, as NATS takes
  // it). Off, the simulation redelivers only what was released.
  bool expire_unacked = false;
};

struct Delivery {
  int64_t sequence_number = 0;  // the broker's number for the stored message (a resend: a new one)
  OrderPlaced message;
  int delivery_count = 0;    // 1 on the first delivery, as the broker counts
  int64_t delivery_tag = 0;  // new on every delivery (RabbitMQ's per channel, from 1)
  bool redelivered = false;  // the broker says it delivered this message before
  uint64_t receipt = 0;      // the implementation's handle for settling it
};

enum class SendResult { kAccepted, kDuplicateDropped };

struct DeadLetter {
  Delivery delivery;
  std::string reason;  // "MaxDeliveryCountExceeded" / "delivery_limit", or the consumer's own
  std::string description;
};

// Counters since the broker was made, of what the broker answered.
struct BrokerStats {
  int64_t sent = 0;        // Send calls, replays included
  int64_t accepted = 0;    // sends that entered the queue
  int64_t dropped = 0;     // sends dropped by duplicate detection
  int64_t deliveries = 0;  // Receive calls that handed out a message
  int64_t acked = 0;
  int64_t redelivered = 0;    // releases that put a message back (Abandon, LoseAck)
  int64_t dead_lettered = 0;  // messages the broker moved to its dead letters
  int64_t gave_up = 0;        // messages it stopped delivering without a dead letter (NATS)
};

class Broker {
 public:
  // recorder may be null; it must outlive the broker.
  explicit Broker(Recorder* recorder) : recorder_(recorder) {}
  virtual ~Broker() = default;
  Broker(const Broker&) = delete;
  Broker& operator=(const Broker&) = delete;

  virtual BrokerKind kind() const = 0;
  // "simulated", "NATS JetStream 2.9.10", "RabbitMQ 3.10.8": what answered.
  virtual std::string server() const = 0;

  // Sends message; the send is recorded as the producer's step.
  virtual SendResult Send(const OrderPlaced& message) = 0;
  // Sends message as sender's step (its instance, pid and actor, as Session::StampTrace
  // fills them): an outbox's dispatcher, a consumer that sends from its handler.
  SendResult SendAs(const OrderPlaced& message, const TraceEvent& sender);
  // The next delivery, now in flight; nullopt when nothing more will come: the queue is
  // empty and no delivery waits for an ack or a redelivery timer. Throws BrokerError.
  virtual std::optional<Delivery> Receive() = 0;

  // Settling a delivery that is not in flight throws std::logic_error. Ack returns whether
  // the broker took it (false: the consumer's channel is gone, the ack cannot be sent).
  virtual bool Ack(const Delivery& delivery) = 0;
  virtual void Abandon(const Delivery& delivery) = 0;
  virtual void LoseAck(const Delivery& delivery) = 0;
  // LoseAck's release of a delivery its consumer never acked (it died at a crash point, or
  // the broker gave up waiting while it still worked): recorded as "unacked", not as an ack
  // that was sent and lost on the way.
  void ReleaseUnacked(const Delivery& delivery);
  virtual void DeadLetterIt(const Delivery& delivery, const std::string& reason,
                            const std::string& description) = 0;
  // The business's verdict (kVerdictRight, kVerdictWrong; "" none) on the next settle this
  // broker records, an ack, nack, lost ack or dead letter: used once. Drain passes its
  // handler's Verdict::judged (an ack that silences a case nobody settled is wrong).
  void JudgeNextSettle(const char* verdict) { next_settle_verdict_ = verdict; }
  // The business's verdict on every step that says a message of this queue went to the
  // dead-letter queue by the broker's own rule (the simulation's max deliveries, RabbitMQ's
  // dead letter arriving): a poison message there is right, a message handled fine there is
  // wrong. The lesson knows which; "" (none) until it says.
  void JudgeDeadLetters(const char* verdict) { dead_letter_verdict_ = verdict; }

  // Sends every dead letter again (the operator's replay) and empties the dead letters.
  // Returns how many were accepted.
  virtual int64_t ReplayDeadLetters() = 0;

  virtual const std::vector<DeadLetter>& dead_letters() const = 0;
  virtual const BrokerStats& stats() const = 0;
  virtual const BrokerOptions& options() const = 0;

 protected:
  // Records a broker step: op as in TraceEvent::op, about the message and delivery count of
  // `about` (0 for a send), with the business's verdict on it when it has one (a message
  // the server silenced: kVerdictWrong).
  //
  // A step's result says only what was observed when it was recorded. The simulation is the
  // queue, and says where a released message went ("back in the queue ...", "dead-lettered:
  // ...") and that an ack "removed" it; a real broker's client says what it sent and what
  // the server answered ("sent": a nak, a RabbitMQ ack, which get no reply; "accepted by the
  // server"), and what the server then did is its own later step: a redelivery, a dead
  // letter arriving ("dead-lettered"), NATS's MAX_DELIVERIES advisory ("give-up").
  void Note(const char* op, const Delivery& about, const std::string& detail,
            const std::string& result, const char* verdict = "");
  // The operator's send of a dead letter it replays (ReplayDeadLetters).
  SendResult SendReplay(const OrderPlaced& message);
  // A delivery was handed out: offered to the next consumer connection opened.
  void Offer(const Delivery& delivery);
  // A delivery was settled: its offer to the next connection is withdrawn.
  void Settled();
  // Which stored message of its MessageId `about` is (TraceEvent::copy), by the broker's
  // sequence number: stored (a send the broker accepted) numbers a new one; 0 where the
  // broker gave no sequence number.
  int CopyOf(const Delivery& about, bool stored);
  Recorder* recorder() const { return recorder_; }
  // In ReleaseUnacked: the LoseAck under way releases a delivery nobody acked.
  bool releasing_unacked() const { return unacked_; }
  // JudgeNextSettle's verdict, taken now for a settle noted later (NATS's "unacked").
  const char* TakeSettleVerdict() {
    const char* verdict = next_settle_verdict_;
    next_settle_verdict_ = "";
    return verdict;
  }

 private:
  Recorder* recorder_;
  const TraceEvent* sender_ = nullptr;  // whose send Send records; null: the producer's
  bool unacked_ = false;                // in ReleaseUnacked: LoseAck's note is "unacked"
  const char* next_settle_verdict_ = "";  // JudgeNextSettle's, for the next settle noted
  const char* dead_letter_verdict_ = "";  // JudgeDeadLetters's
  std::map<std::string, int> copies_;   // MessageId -> messages stored under it so far
  std::map<int64_t, int> copy_of_;      // sequence number -> which of them it is
};

// A step of the broker's as the trace records it: instance "broker" in this process, kind
// "broker", the broker's actor, op (TraceEvent::op), about the message `about` names with the
// broker's number for that delivery (0 for a send), stamped now on recorder's clock.
// Broker::Note records each of its steps from it; the explorer, whose plan is its broker,
// records its release of an unacked delivery with it.
TraceEvent BrokerEvent(const Recorder& recorder, std::string_view op, const DeliveryRef& about,
                       std::string detail, std::string result = "");

// Where lessons get their brokers: one kind of broker, one server, for a whole command.
class BrokerFactory {
 public:
  virtual ~BrokerFactory() = default;
  virtual BrokerKind kind() const = 0;
  // A new queue on the broker, empty, with these options, and a consumer on it. clock is the
  // simulation's time (a real broker keeps its own). Throws std::invalid_argument for
  // options out of range, BrokerError when the broker cannot be used.
  virtual std::unique_ptr<Broker> Open(Clock& clock, const BrokerOptions& options,
                                       Recorder* recorder) const = 0;
};

// The simulated broker's factory (the default).
const BrokerFactory& SimulatedBrokers();

// Throws std::invalid_argument for options out of range (any implementation).
void ValidateBrokerOptions(const BrokerOptions& options);

// The body of a message on a real broker: OrderPlaced as JSON ({"messageId", "orderId",
// "bookId", "quantity"}). Decode returns nullopt for a body that is not one.
std::string EncodeOrder(const OrderPlaced& message);
std::optional<OrderPlaced> DecodeOrder(std::string_view body);

// What a consumer did with one delivery, for Drain.
enum class Disposition {
  kAck,         // done, or a duplicate skipped: acknowledged
  kAbandon,     // the consumer gave up (threw): redeliver
  kAckLost,     // the consumer finished, the ack never reached the broker: redeliver
  kDeadLetter,  // the consumer dead-letters it (with Verdict's reason)
  kUnacked,     // the consumer died before it acked: the broker gives it out again (ReleaseUnacked)
};

struct Verdict {
  Verdict(Disposition d = Disposition::kAck) : disposition(d) {}  // NOLINT: implicit on purpose
  Verdict(Disposition d, std::string why, std::string text)
      : disposition(d), reason(std::move(why)), description(std::move(text)) {}

  Disposition disposition;
  std::string reason;  // for kDeadLetter
  std::string description;
  const char* judged = "";  // the business's verdict on this settle (Broker::JudgeNextSettle)
  // Run once the settle is done (an alert that says where the message went, raised after it
  // went there); may be empty.
  std::function<void()> then;
};

// Delivers until Receive says nothing more will come, settling each delivery as handler
// decides. Returns the number of deliveries made. A message released again and again is
// dead-lettered (or given up, NATS) after max_delivery_count deliveries, so Drain ends.
int64_t Drain(Broker& broker, const std::function<Verdict(const Delivery&)>& handler);

}  // namespace dedupsim
