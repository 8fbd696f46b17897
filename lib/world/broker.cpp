#include "world/broker.h"

#include <unistd.h>

#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "core/duration.h"
#include "os/this_pid.h"

namespace dedupsim {

Broker::Broker(Clock& clock, BrokerOptions options, Recorder* recorder)
    : clock_(clock), options_(options), recorder_(recorder) {
  if (options_.max_delivery_count < 1) {
    throw std::invalid_argument("max delivery count must be at least 1");
  }
  if (options_.duplicate_detection_window < std::chrono::milliseconds(0) ||
      options_.duplicate_detection_window > kMaxDuplicateDetectionWindow) {
    throw std::invalid_argument("duplicate detection window must be between 0 and 7 days");
  }
}

void Broker::Note(const char* op, const Delivery& about, const std::string& detail,
                  const std::string& result, const TraceEvent* sender) {
  if (recorder_ == nullptr) return;
  TraceEvent e;
  e.at_us = recorder_->MicrosSinceOrigin();
  e.instance = "broker";
  e.pid = ThisPid();
  e.kind = "broker";
  e.actor = std::string_view(op) == "replay" ? kActorOperator : kActorBroker;
  if (std::string_view(op) == "send" || std::string_view(op) == "drop") {
    // A send is its sender's step.
    e.actor = sender != nullptr && !sender->actor.empty() ? sender->actor : kActorProducer;
    e.instance = sender != nullptr ? sender->instance : "producer";
    if (sender != nullptr && sender->pid != 0) e.pid = sender->pid;
  }
  e.op = op;
  e.key = about.message.message_id;
  e.delivery = about.delivery_count;
  e.detail = detail;
  e.result = result;
  recorder_->Record(std::move(e));
}

SendResult Broker::Send(const OrderPlaced& message, const TraceEvent* sender) {
  stats_.sent++;
  TimePoint now = clock_.Now();
  if (options_.duplicate_detection_window.count() > 0) {
    auto seen = accepted_at_.find(message.message_id);
    if (seen != accepted_at_.end() && now - seen->second < options_.duplicate_detection_window) {
      stats_.dropped++;
      Note("drop", Delivery{0, message, 0}, fmt::format("send {}", message.message_id),
           fmt::format("dropped: same MessageId accepted within {}",
                       FormatDuration(options_.duplicate_detection_window)),
           sender);
      return SendResult::kDuplicateDropped;
    }
  }
  accepted_at_[message.message_id] = now;
  Delivery entry{next_sequence_++, message, 0};
  queue_.push_back(entry);
  stats_.accepted++;
  Note("send", entry, fmt::format("send {}", message.message_id),
       fmt::format("accepted as sequence {}", entry.sequence_number), sender);
  return SendResult::kAccepted;
}

std::optional<Delivery> Broker::Receive() {
  if (queue_.empty()) return std::nullopt;
  Delivery delivery = queue_.front();
  queue_.pop_front();
  delivery.delivery_count++;
  delivery.delivery_tag = next_delivery_tag_++;
  delivery.redelivered = delivery.delivery_count > 1;
  in_flight_[delivery.sequence_number] = delivery;
  stats_.deliveries++;
  Note("deliver", delivery,
       fmt::format("deliver {} (sequence {})", delivery.message.message_id,
                   delivery.sequence_number),
       fmt::format("delivery {} of at most {}", delivery.delivery_count,
                   options_.max_delivery_count));
  if (recorder_ != nullptr) {
    recorder_->OfferDelivery({delivery.message.message_id, delivery.delivery_count});
  }
  return delivery;
}

Delivery Broker::TakeInFlight(const Delivery& delivery, const char* action) {
  auto it = in_flight_.find(delivery.sequence_number);
  if (it == in_flight_.end()) {
    throw std::logic_error(fmt::format("{}: sequence {} is not in flight", action,
                                       delivery.sequence_number));
  }
  Delivery held = it->second;
  in_flight_.erase(it);
  return held;
}

void Broker::Ack(const Delivery& delivery) {
  Delivery held = TakeInFlight(delivery, "ack");
  stats_.acked++;
  Settled();
  Note("ack", held, fmt::format("ack {} (sequence {})", held.message.message_id, held.sequence_number),
       "removed");
}

void Broker::Release(const Delivery& delivery, const char* why) {
  Delivery held = TakeInFlight(delivery, why);
  Settled();
  const char* op = std::string_view(why) == "abandon" ? "abandon" : "ack-lost";
  if (held.delivery_count >= options_.max_delivery_count) {
    dead_letters_.push_back(DeadLetter{
        held, "MaxDeliveryCountExceeded",
        fmt::format("delivered {} times without an ack", held.delivery_count)});
    stats_.dead_lettered++;
    Note(op, held, fmt::format("{} {} (sequence {})", why, held.message.message_id, held.sequence_number),
         "dead-lettered: MaxDeliveryCountExceeded");
    return;
  }
  queue_.push_front(held);  // next in line, as a lock expiry makes it available again
  stats_.redelivered++;
  Note(op, held, fmt::format("{} {} (sequence {})", why, held.message.message_id, held.sequence_number),
       "back in the queue for redelivery");
}

void Broker::Abandon(const Delivery& delivery) { Release(delivery, "abandon"); }

void Broker::LoseAck(const Delivery& delivery) { Release(delivery, "ack lost for"); }

void Broker::DeadLetterIt(const Delivery& delivery, const std::string& reason,
                          const std::string& description) {
  Delivery held = TakeInFlight(delivery, "dead-letter");
  dead_letters_.push_back(DeadLetter{held, reason, description});
  stats_.dead_lettered++;
  Settled();
  Note("dead-letter", held,
       fmt::format("dead-letter {} (sequence {})", held.message.message_id, held.sequence_number),
       reason);
}

int64_t Broker::ReplayDeadLetters() {
  std::vector<DeadLetter> letters;
  letters.swap(dead_letters_);
  int64_t accepted = 0;
  for (const DeadLetter& letter : letters) {
    Note("replay", letter.delivery,
         fmt::format("replay {} from the dead-letter queue", letter.delivery.message.message_id),
         "resubmitted");
    TraceEvent operator_step;  // the operator sends it again
    operator_step.actor = kActorOperator;
    operator_step.instance = "operator";
    if (Send(letter.delivery.message, &operator_step) == SendResult::kAccepted) accepted++;
  }
  return accepted;
}

void Broker::Settled() {
  if (recorder_ != nullptr) recorder_->TakeOfferedDelivery();  // an offer nobody took
}

int64_t Drain(Broker& broker, const std::function<Verdict(const Delivery&)>& handler) {
  int64_t deliveries = 0;
  while (std::optional<Delivery> delivery = broker.Receive()) {
    deliveries++;
    Verdict verdict = handler(*delivery);
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
    }
  }
  return deliveries;
}

}  // namespace dedupsim
