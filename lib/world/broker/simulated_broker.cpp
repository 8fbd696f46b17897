#include "world/broker/simulated_broker.h"

#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "core/duration.h"

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

void SimulatedBroker::ExpireUnacked() {
  if (!options_.expire_unacked) return;
  const TimePoint now = clock_.Now();
  for (auto it = in_flight_.begin(); it != in_flight_.end();) {
    auto at = delivered_at_.find(it->first);
    if (at == delivered_at_.end() || now - at->second < options_.ack_wait) {
      ++it;
      continue;
    }
    Delivery expired = it->second;
    delivered_at_.erase(at);
    it = in_flight_.erase(it);
    if (expired.delivery_count >= options_.max_delivery_count) {
      dead_letters_.push_back(DeadLetter{expired, "MaxDeliveryCountExceeded",
                                         fmt::format("delivered {} times without an ack", expired.delivery_count)});
      stats_.dead_lettered++;
      Note("ack-wait", expired, fmt::format("ack wait for {} passed", expired.message.message_id),
           "dead-lettered: MaxDeliveryCountExceeded");
      continue;
    }
    expired_[expired.sequence_number] = expired.delivery_count;
    queue_.push_front(expired);
    stats_.redelivered++;
    Note("ack-wait", expired,
         fmt::format("ack wait ({}) for {} passed", FormatDuration(options_.ack_wait),
                     expired.message.message_id),
         "back in the queue for redelivery; its consumer may still be working");
  }
}

std::optional<Delivery> SimulatedBroker::Receive() {
  ExpireUnacked();
  if (queue_.empty()) return std::nullopt;
  Delivery delivery = queue_.front();
  queue_.pop_front();
  delivery.delivery_count++;
  delivery.delivery_tag = next_delivery_tag_++;
  delivery.redelivered = delivery.delivery_count > 1;
  delivery.receipt = static_cast<uint64_t>(delivery.sequence_number);
  in_flight_[delivery.sequence_number] = delivery;
  delivered_at_[delivery.sequence_number] = clock_.Now();
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
  delivered_at_.erase(delivery.sequence_number);
  return held;
}

bool SimulatedBroker::Ack(const Delivery& delivery) {
  if (options_.expire_unacked) {
    // A late ack (its delivery expired and went out again), or the ack of a delivery whose
    // message a late ack settled: taken, as NATS takes it; the message is counted done.
    auto in = in_flight_.find(delivery.sequence_number);
    const bool stale = (in != in_flight_.end() && in->second.delivery_count != delivery.delivery_count) ||
                       (in == in_flight_.end() && expired_.count(delivery.sequence_number) > 0);
    if (stale || settled_late_.count(delivery.sequence_number) > 0) {
      if (in != in_flight_.end()) {
        in_flight_.erase(in);
        delivered_at_.erase(delivery.sequence_number);
      }
      std::erase_if(queue_, [&](const Delivery& d) { return d.sequence_number == delivery.sequence_number; });
      const bool first = settled_late_.insert(delivery.sequence_number).second;
      if (first) stats_.acked++;
      Settled();
      Note("ack", delivery,
           fmt::format("ack {} (sequence {}, delivery {})", delivery.message.message_id,
                       delivery.sequence_number, delivery.delivery_count),
           first ? "accepted late: the message is counted done, though another delivery of it is out"
                 : "accepted: the message was counted done already");
      return true;
    }
  }
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
         "");  // the send that follows says what the broker answered
    if (SendReplay(letter.delivery.message) == SendResult::kAccepted) accepted++;
  }
  return accepted;
}

}  // namespace dedupsim
