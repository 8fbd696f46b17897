// The simulated broker (ack, redelivery, max delivery count, dead letters, replay, the
// send-side duplicate detection window on a manual clock), durations and payload hashes.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "core/clock.h"
#include "core/duration.h"
#include "core/message.h"
#include "trace/trace.h"
#include "world/broker/simulated_broker.h"

namespace broker_test {

using namespace dedupsim;
using namespace std::chrono_literals;

namespace {

TimePoint Day0() { return TimePoint(std::chrono::hours(24 * 20000)); }

OrderPlaced Order(const std::string& id, int64_t quantity = 2) {
  return OrderPlaced{id, "order-1", "book-1", quantity};
}

}  // namespace

TEST_CASE("an acked message is delivered once and gone", "[broker]") {
  ManualClock clock(Day0());
  SimulatedBroker broker(clock, BrokerOptions{});
  REQUIRE(broker.Send(Order("m-1")) == SendResult::kAccepted);
  auto d = broker.Receive();
  REQUIRE(d);
  CHECK(d->message.message_id == "m-1");
  CHECK(d->delivery_count == 1);
  CHECK(broker.in_flight() == 1);
  broker.Ack(*d);
  CHECK_FALSE(broker.Receive());
  CHECK(broker.stats().deliveries == 1);
  CHECK(broker.stats().acked == 1);
  CHECK(broker.in_flight() == 0);
}

TEST_CASE("a lost ack or an abandon redelivers the same message, counted", "[broker]") {
  ManualClock clock(Day0());
  SimulatedBroker broker(clock, BrokerOptions{});
  broker.Send(Order("m-1"));
  broker.Send(Order("m-2"));
  auto first = broker.Receive();
  broker.LoseAck(*first);
  auto again = broker.Receive();  // back at the head of the queue, before m-2
  REQUIRE(again);
  CHECK(again->message.message_id == "m-1");
  CHECK(again->sequence_number == first->sequence_number);
  CHECK(again->delivery_count == 2);
  broker.Abandon(*again);
  auto third = broker.Receive();
  CHECK(third->delivery_count == 3);
  broker.Ack(*third);
  CHECK(broker.Receive()->message.message_id == "m-2");
  CHECK(broker.stats().redelivered == 2);
}

TEST_CASE("settling a delivery that is not in flight is a logic error", "[broker]") {
  ManualClock clock(Day0());
  SimulatedBroker broker(clock, BrokerOptions{});
  broker.Send(Order("m-1"));
  auto d = broker.Receive();
  broker.Ack(*d);
  CHECK_THROWS_AS(broker.Ack(*d), std::logic_error);
  CHECK_THROWS_AS(broker.Abandon(*d), std::logic_error);
}

TEST_CASE("after max deliveries the message goes to the dead-letter queue", "[broker]") {
  ManualClock clock(Day0());
  SimulatedBroker broker(clock, BrokerOptions{.max_delivery_count = 3});
  broker.Send(Order("m-1"));
  int64_t deliveries = Drain(broker, [](const Delivery&) { return Verdict{Disposition::kAbandon}; });
  CHECK(deliveries == 3);
  REQUIRE(broker.dead_letters().size() == 1);
  CHECK(broker.dead_letters()[0].reason == "MaxDeliveryCountExceeded");
  CHECK(broker.dead_letters()[0].delivery.delivery_count == 3);
  CHECK(broker.stats().dead_lettered == 1);
  CHECK(broker.queued() == 0);
}

TEST_CASE("a consumer can dead-letter a delivery with its own reason", "[broker]") {
  ManualClock clock(Day0());
  SimulatedBroker broker(clock, BrokerOptions{});
  broker.Send(Order("m-1"));
  Drain(broker, [](const Delivery&) {
    return Verdict{Disposition::kDeadLetter, "ContentMismatch", "other payload"};
  });
  REQUIRE(broker.dead_letters().size() == 1);
  CHECK(broker.dead_letters()[0].reason == "ContentMismatch");
  CHECK(broker.dead_letters()[0].description == "other payload");
  CHECK(broker.dead_letters()[0].delivery.delivery_count == 1);
}

TEST_CASE("a replay resends dead letters with the same message id", "[broker]") {
  ManualClock clock(Day0());
  SimulatedBroker broker(clock, BrokerOptions{.max_delivery_count = 1});
  broker.Send(Order("m-1"));
  auto d = broker.Receive();
  broker.LoseAck(*d);
  REQUIRE(broker.dead_letters().size() == 1);
  CHECK(broker.ReplayDeadLetters() == 1);
  CHECK(broker.dead_letters().empty());
  auto replayed = broker.Receive();
  REQUIRE(replayed);
  CHECK(replayed->message.message_id == "m-1");
  CHECK(replayed->sequence_number != d->sequence_number);  // a new send
  CHECK(replayed->delivery_count == 1);
}

TEST_CASE("duplicate detection drops a resend inside the window, not after it", "[broker]") {
  ManualClock clock(Day0());
  SimulatedBroker broker(clock, BrokerOptions{.duplicate_detection_window = 10min});
  CHECK(broker.Send(Order("m-1")) == SendResult::kAccepted);
  clock.Advance(9min);
  CHECK(broker.Send(Order("m-1")) == SendResult::kDuplicateDropped);
  CHECK(broker.Send(Order("m-2")) == SendResult::kAccepted);  // another id
  clock.Advance(2min);  // 11 minutes after the accepted send
  CHECK(broker.Send(Order("m-1")) == SendResult::kAccepted);
  CHECK(broker.stats().sent == 4);
  CHECK(broker.stats().dropped == 1);
  CHECK(broker.queued() == 3);
}

TEST_CASE("duplicate detection never touches a redelivery", "[broker]") {
  ManualClock clock(Day0());
  SimulatedBroker broker(clock, BrokerOptions{.duplicate_detection_window = 10min});
  broker.Send(Order("m-1"));
  int64_t deliveries = Drain(broker, [](const Delivery& d) {
    return Verdict{d.delivery_count == 1 ? Disposition::kAckLost : Disposition::kAck};
  });
  CHECK(deliveries == 2);
  CHECK(broker.stats().dropped == 0);
}

TEST_CASE("without a window every send is accepted", "[broker]") {
  ManualClock clock(Day0());
  SimulatedBroker broker(clock, BrokerOptions{});
  broker.Send(Order("m-1"));
  CHECK(broker.Send(Order("m-1")) == SendResult::kAccepted);
  CHECK(broker.queued() == 2);
}

TEST_CASE("broker options out of range are refused", "[broker]") {
  ManualClock clock(Day0());
  CHECK_THROWS_AS(SimulatedBroker(clock, BrokerOptions{.max_delivery_count = 0}), std::invalid_argument);
  CHECK_THROWS_AS(SimulatedBroker(clock, BrokerOptions{.duplicate_detection_window = std::chrono::hours(24 * 8)}),
                  std::invalid_argument);
  CHECK_NOTHROW(SimulatedBroker(clock, BrokerOptions{.duplicate_detection_window = kMaxDuplicateDetectionWindow}));
}

TEST_CASE("the broker notes its steps on the recorder", "[broker]") {
  ManualClock clock(Day0());
  Recorder recorder;
  SimulatedBroker broker(clock, BrokerOptions{.duplicate_detection_window = 1min}, &recorder);
  broker.Send(Order("m-1"));
  broker.Send(Order("m-1"));
  auto events = recorder.Events();
  REQUIRE(events.size() == 2);
  CHECK(events[0].instance == "producer");  // a send is its sender's step
  CHECK(events[0].actor == kActorProducer);
  CHECK(events[0].result == "accepted as sequence 1");
  CHECK(events[1].result.find("dropped") == 0);
}

TEST_CASE("durations read a whole number and one unit", "[duration]") {
  CHECK(ParseDuration("14d") == std::chrono::milliseconds(14 * 24h));
  CHECK(ParseDuration("36h") == std::chrono::milliseconds(36h));
  CHECK(ParseDuration("90m") == std::chrono::milliseconds(90min));
  CHECK(ParseDuration("30s") == std::chrono::milliseconds(30s));
  CHECK(ParseDuration("0d") == std::chrono::milliseconds(0));
  for (const char* bad : {"", "d", "14", "14x", "-14d", "+14d", "1.5d", " 14d", "14d ", "14 d",
                          "99999999999999999999d", "36600d"}) {
    INFO(bad);
    CHECK_FALSE(ParseDuration(bad));
  }
}

TEST_CASE("durations print in the largest whole unit", "[duration]") {
  CHECK(FormatDuration(14 * 24h) == "14d");
  CHECK(FormatDuration(36h) == "36h");
  CHECK(FormatDuration(90min) == "90m");
  CHECK(FormatDuration(30s) == "30s");
  CHECK(FormatDuration(0ms) == "0s");
  CHECK(FormatDuration(1500ms) == "1500ms");
  CHECK(ParseDuration(FormatDuration(10min)) == std::chrono::milliseconds(10min));
}

TEST_CASE("the payload hash follows the content, not the message id", "[message]") {
  OrderPlaced a = Order("m-1");
  OrderPlaced same = Order("m-2");
  OrderPlaced other = Order("m-1", 3);
  CHECK(PayloadHash(a) == PayloadHash(same));
  CHECK(PayloadHash(a) != PayloadHash(other));
  CHECK(PayloadHash(a).size() == 16);
}

}  // namespace broker_test
