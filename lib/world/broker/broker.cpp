#include "world/broker/broker.h"

#include <nlohmann/json.hpp>
#include <algorithm>
#include <iterator>
#include <stdexcept>

#include "world/broker/simulated_broker.h"
#include "os/this_pid.h"

namespace dedupsim {

std::string_view ToString(BrokerKind kind) {
  switch (kind) {
    case BrokerKind::kSimulated:
      return "sim";
    case BrokerKind::kNats:
      return "nats";
    case BrokerKind::kRabbitMq:
      return "rabbitmq";
  }
  return "sim";
}

std::optional<BrokerKind> ParseBrokerKind(std::string_view word) {
  for (BrokerKind k : {BrokerKind::kSimulated, BrokerKind::kNats, BrokerKind::kRabbitMq}) {
    if (word == ToString(k)) return k;
  }
  return std::nullopt;
}

void ValidateBrokerOptions(const BrokerOptions& options) {
  if (options.max_delivery_count < 1) {
    throw std::invalid_argument("max delivery count must be at least 1");
  }
  if (options.duplicate_detection_window < std::chrono::milliseconds(0) ||
      options.duplicate_detection_window > kMaxDuplicateDetectionWindow) {
    throw std::invalid_argument("duplicate detection window must be between 0 and 7 days");
  }
  if (options.ack_wait < std::chrono::milliseconds(1)) {
    throw std::invalid_argument("ack wait must be at least 1 ms");
  }
}

std::string EncodeOrder(const OrderPlaced& m) {
  return nlohmann::json{{"messageId", m.message_id},
                        {"orderId", m.order_id},
                        {"bookId", m.book_id},
                        {"quantity", m.quantity}}
      .dump();
}

std::optional<OrderPlaced> DecodeOrder(std::string_view body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  for (const char* field : {"messageId", "orderId", "bookId"}) {
    if (!j.contains(field) || !j[field].is_string()) return std::nullopt;
  }
  if (!j.contains("quantity") || !j["quantity"].is_number_integer()) return std::nullopt;
  return OrderPlaced{j["messageId"].get<std::string>(), j["orderId"].get<std::string>(),
                     j["bookId"].get<std::string>(), j["quantity"].get<int64_t>()};
}

TraceEvent BrokerEvent(const Recorder& recorder, std::string_view op, const DeliveryRef& about,
                       std::string detail, std::string result) {
  TraceEvent e;
  e.at_us = recorder.MicrosSinceOrigin();
  e.instance = "broker";
  e.pid = ThisPid();
  e.kind = "broker";
  e.actor = kActorBroker;
  e.op = op;
  e.key = about.key;
  e.delivery = about.number;
  e.copy = about.copy;
  e.detail = std::move(detail);
  e.result = std::move(result);
  return e;
}

void Broker::Note(const char* op, const Delivery& about, const std::string& detail,
                  const std::string& result, const char* verdict) {
  if (recorder_ == nullptr) return;
  TraceEvent e = BrokerEvent(*recorder_, unacked_ && std::string_view(op) == "ack-lost" ? "unacked" : op,
                             DeliveryRef{about.message.message_id, about.delivery_count,
                                         CopyOf(about, std::string_view(op) == "send")},
                             detail, result);
  const std::string_view settle_ops[] = {"ack", "abandon", "ack-lost", "dead-letter"};
  if (std::find(std::begin(settle_ops), std::end(settle_ops), std::string_view(op)) !=
      std::end(settle_ops)) {
    if (*verdict == '\0') verdict = next_settle_verdict_;
    next_settle_verdict_ = "";
  }
  const bool dead_lettered = std::string_view(op) == "dead-lettered" ||
                             (std::string_view(op) != "dead-letter" &&
                              result.rfind("dead-lettered", 0) == 0);
  if (*verdict == '\0' && dead_lettered) verdict = dead_letter_verdict_;
  e.verdict = verdict;
  if (std::string_view(op) == "replay") {
    // The operator takes the letter out and sends it again: its step, in the trace too.
    e.actor = kActorOperator;
    e.instance = "operator";
  }
  if (std::string_view(op) == "send" || std::string_view(op) == "drop") {
    // A send is its sender's step.
    e.actor = sender_ != nullptr && !sender_->actor.empty() ? sender_->actor : kActorProducer;
    e.instance = sender_ != nullptr ? sender_->instance : "producer";
    if (sender_ != nullptr && sender_->pid != 0) e.pid = sender_->pid;
  }
  recorder_->Record(std::move(e));
}

void Broker::ReleaseUnacked(const Delivery& delivery) {
  struct Restore {
    bool& flag;
    ~Restore() { flag = false; }
  } restore{unacked_};
  unacked_ = true;
  LoseAck(delivery);
}

SendResult Broker::SendAs(const OrderPlaced& message, const TraceEvent& sender) {
  struct Restore {
    const TraceEvent*& slot;
    const TraceEvent* before;
    ~Restore() { slot = before; }
  } restore{sender_, sender_};
  sender_ = &sender;
  return Send(message);
}

SendResult Broker::SendReplay(const OrderPlaced& message) {
  TraceEvent operator_step;  // the operator sends it again
  operator_step.actor = kActorOperator;
  operator_step.instance = "operator";
  return SendAs(message, operator_step);
}

void Broker::Offer(const Delivery& delivery) {
  if (recorder_ != nullptr) {
    recorder_->OfferDelivery(
        {delivery.message.message_id, delivery.delivery_count, CopyOf(delivery, false)});
  }
}

int Broker::CopyOf(const Delivery& about, bool stored) {
  if (about.sequence_number <= 0) return 0;  // the broker did not say which message
  if (stored) {
    const int copy = ++copies_[about.message.message_id];
    copy_of_[about.sequence_number] = copy;
    return copy;
  }
  const auto found = copy_of_.find(about.sequence_number);
  return found == copy_of_.end() ? 0 : found->second;
}

void Broker::Settled() {
  if (recorder_ != nullptr) recorder_->TakeOfferedDelivery();  // an offer nobody took
}

namespace {

class SimulatedFactory final : public BrokerFactory {
 public:
  BrokerKind kind() const override { return BrokerKind::kSimulated; }
  std::unique_ptr<Broker> Open(Clock& clock, const BrokerOptions& options,
                               Recorder* recorder) const override {
    return std::make_unique<SimulatedBroker>(clock, options, recorder);
  }
};

}  // namespace

const BrokerFactory& SimulatedBrokers() {
  static const SimulatedFactory factory;
  return factory;
}

int64_t Drain(Broker& broker, const std::function<Verdict(const Delivery&)>& handler) {
  int64_t deliveries = 0;
  while (std::optional<Delivery> delivery = broker.Receive()) {
    deliveries++;
    Verdict verdict = handler(*delivery);
    broker.JudgeNextSettle(verdict.judged);
    switch (verdict.disposition) {
      case Disposition::kAck:
        broker.Ack(*delivery);
        break;
      case Disposition::kAbandon:
        broker.Abandon(*delivery);
        break;
      case Disposition::kAckLost:
        broker.LoseAck(*delivery);
        break;
      case Disposition::kDeadLetter:
        broker.DeadLetterIt(*delivery, verdict.reason, verdict.description);
        break;
      case Disposition::kUnacked:
        broker.ReleaseUnacked(*delivery);
        break;
    }
    if (verdict.then) verdict.then();
  }
  return deliveries;
}

}  // namespace dedupsim
