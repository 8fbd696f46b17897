#include "broker/simulated_broker.h"

#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "duration.h"

namespace dedupsim {

SimulatedBroker::SimulatedBroker(Clock& clock, BrokerOptions options, Recorder* recorder)
    : Broker(recorder), clock_(clock), options_(options) {
  ValidateBrokerOptions(options_);
}

SendResult SimulatedBroker::Send(const OrderPlaced& message) {
  stats_.sent++;
  TimePoint now = clock_.Now();
  if (options_.duplicate_detection_window.count() > 0) {
    auto seen = accepted_at_.find(message.message_id);
    if (seen != accepted_at_.end() && now - seen->second < options_.duplicate_detection_window) {
      stats_.dropped++;
      Note("drop", Delivery{0, message, 0}, fmt::format("send {}", message.message_id),
           fmt::format("dropped: same MessageId accepted within {}",
                       FormatDuration(options_.duplicate_detection_window)));
      return SendResult::kDuplicateDropped;
    }
  }
  accepted_at_[message.message_id] = now;
  Delivery entry{next_sequence_++, message, 0};
  queue_.push_back(entry);
  stats_.accepted++;
  Note("send", entry, fmt::format("send {}", message.message_id),
       fmt::format("accepted as sequence {}", entry.sequence_number));
  return SendResult::kAccepted;
}

std::optional<Delivery> SimulatedBroker::Receive() {
  if (queue_.empty()) return std::nullopt;
  Delivery delivery = queue_.front();
  queue_.pop_front();
  delivery.delivery_count++;
  delivery.delivery_tag = next_delivery_tag_++;
  delivery.redelivered = delivery.delivery_count > 1;
  delivery.receipt = static_cast<uint64_t>(delivery.sequence_number);
  in_flight_[delivery.sequence_number] = delivery;
  stats_.deliveries++;
  Note("deliver", delivery,
       fmt::format("deliver {} (sequence {})", delivery.message.message_id,
                   delivery.sequence_number),
       fmt::format("delivery {} of at most {}", delivery.delivery_count,
                   options_.max_delivery_count));
  Offer(delivery);
  return delivery;
}

Delivery SimulatedBroker::TakeInFlight(const Delivery& delivery, const char* action) {
  auto it = in_flight_.find(delivery.sequence_number);
  if (it == in_flight_.end()) {
    throw std::logic_error(fmt::format("{}: sequence {} is not in flight", action,
                                       delivery.sequence_number));
  }
  Delivery held = it->second;
  in_flight_.erase(it);
  return held;
}

bool SimulatedBroker::Ack(const Delivery& delivery) {
  Delivery held = TakeInFlight(delivery, "ack");
  stats_.acked++;
  Settled();
  Note("ack", held, fmt::format("ack {} (sequence {})", held.message.message_id, held.sequence_number),
       "removed");
  return true;
}

void SimulatedBroker::Release(const Delivery& delivery, const char* why) {
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

void SimulatedBroker::Abandon(const Delivery& delivery) { Release(delivery, "abandon"); }

void SimulatedBroker::LoseAck(const Delivery& delivery) { Release(delivery, "ack lost for"); }

void SimulatedBroker::DeadLetterIt(const Delivery& delivery, const std::string& reason,
                          const std::string& description) {
  Delivery held = TakeInFlight(delivery, "dead-letter");
  dead_letters_.push_back(DeadLetter{held, reason, description});
  stats_.dead_lettered++;
  Settled();
  Note("dead-letter", held,
       fmt::format("dead-letter {} (sequence {})", held.message.message_id, held.sequence_number),
       reason);
}

int64_t SimulatedBroker::ReplayDeadLetters() {
  std::vector<DeadLetter> letters;
  letters.swap(dead_letters_);
  int64_t accepted = 0;
  for (const DeadLetter& letter : letters) {
    Note("replay", letter.delivery,
         fmt::format("replay {} from the dead-letter queue", letter.delivery.message.message_id),
         "resubmitted");
    if (Send(letter.delivery.message) == SendResult::kAccepted) accepted++;
  }
  return accepted;
}

}  // namespace dedupsim
