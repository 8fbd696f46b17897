#include "explore/faults.h"

#include <fmt/format.h>

#include <array>
#include <stdexcept>

#include "explore/strategies.h"

namespace dedupsim::explore {

LogicalOrder NewLogicalOrder(IdGenerator& ids, int64_t quantity) {
  LogicalOrder order;
  order.order_id = ids.Next();
  order.book_id = ids.Next();
  order.quantity = quantity;
  return order;
}

OrderPlaced NewMessage(IdGenerator& ids, const LogicalOrder& order) {
  return OrderPlaced{ids.Next(), order.order_id, order.book_id, order.quantity};
}

namespace {

// One order of two books (the post's Ada and her two copies of Dune) and its message.
struct Single {
  Plan plan;
  OrderPlaced message;
};

Single OneOrder(const Strategy& s, IdGenerator& ids) {
  Single out;
  out.plan.orders.push_back(NewLogicalOrder(ids, 2));
  out.plan.subscribers.push_back(&s);
  out.message = NewMessage(ids, out.plan.orders[0]);
  return out;
}

Delivery To(const Strategy& s, const OrderPlaced& m) {
  Delivery d;
  d.subscriber = &s;
  d.order = 0;
  d.message = m;
  return d;
}

std::vector<Plan> Duplicate(const Strategy& s, IdGenerator& ids) {
  Single one = OneOrder(s, ids);
  one.plan.instances.push_back({{To(s, one.message), To(s, one.message)}, -1});
  return {one.plan};
}

std::vector<Plan> Crash(const Strategy& s, IdGenerator& ids) {
  Single one = OneOrder(s, ids);
  std::vector<Plan> plans;
  for (std::string_view point : s.crash_points) {
    Plan p = one.plan;
    p.variant = "crash at " + std::string(point);
    Delivery d = To(s, one.message);
    d.crash_at = {std::string(point)};
    p.instances.push_back({{d}, -1});
    plans.push_back(std::move(p));
  }
  return plans;
}

std::vector<Plan> ConcurrentSized(const Strategy& s, IdGenerator& ids, const WorldSize& world) {
  if (world.instances < 1 || world.instances > kMaxInstances ||
      world.deliveries < world.instances) {
    throw std::logic_error(fmt::format("{} copies in {} instances: not a concurrent plan",
                                       world.deliveries, world.instances));
  }
  Single one = OneOrder(s, ids);
  one.plan.instances.resize(static_cast<size_t>(world.instances));
  for (int k = 0; k < world.deliveries; ++k) {
    one.plan.instances[static_cast<size_t>(k % world.instances)].deliveries.push_back(
        To(s, one.message));
  }
  return {one.plan};
}

std::vector<Plan> Concurrent(const Strategy& s, IdGenerator& ids) {
  return ConcurrentSized(s, ids, WorldSize{});
}

std::vector<Plan> ProducerDuplicate(const Strategy& s, IdGenerator& ids) {
  Single one = OneOrder(s, ids);
  OrderPlaced resent = NewMessage(ids, one.plan.orders[0]);  // same order, new MessageId
  one.plan.instances.push_back({{To(s, one.message), To(s, resent)}, -1});
  return {one.plan};
}

std::vector<Plan> SecondSubscriber(const Strategy& s, IdGenerator& ids) {
  const Strategy* partner = FindStrategy(s.partner);
  if (partner == nullptr || partner->effect == s.effect) {
    throw std::logic_error("strategy " + std::string(s.name) + " names partner '" +
                           std::string(s.partner) + "', which is no strategy of another effect");
  }
  Single one = OneOrder(s, ids);
  one.plan.variant = "with " + std::string(partner->name);
  one.plan.subscribers.push_back(partner);
  one.plan.instances.push_back({{To(s, one.message)}, -1});
  one.plan.instances.push_back({{To(*partner, one.message)}, -1});
  return {one.plan};
}

std::vector<Plan> LostAck(const Strategy& s, IdGenerator& ids) {
  Single one = OneOrder(s, ids);
  Delivery first = To(s, one.message);
  first.ack_lost = true;
  Delivery again = To(s, one.message);
  again.arrives_after = kLockDuration;
  one.plan.instances.push_back({{first}, -1});
  one.plan.instances.push_back({{again}, 0});  // B gets it once A is done and the lock expired
  return {one.plan};
}

const Fault kDuplicate{"duplicate", "the same message delivered twice in a row", &Duplicate};
const Fault kCrash{
    "crash", "the instance dies at each crash point in turn; redelivered until acked", &Crash};
const Fault kConcurrent{
    "concurrent", "two copies at once in two instances, every interleaving the database allows",
    &Concurrent, &ConcurrentSized};
const Fault kProducerDuplicate{"producer-duplicate",
                               "the producer sends the order again under a new MessageId",
                               &ProducerDuplicate};
const Fault kSecondSubscriber{
    "second-subscriber",
    "pub/sub: the other service's consumer handles the same message, same database and Inbox",
    &SecondSubscriber};
const Fault kLostAck{"lost-ack",
                     "processed, the ack lost; another instance gets it when the lock expires",
                     &LostAck};

constexpr std::array<const Fault*, 6> kFaults{
    &kDuplicate, &kCrash, &kConcurrent, &kProducerDuplicate, &kSecondSubscriber, &kLostAck};

}  // namespace

std::span<const Fault* const> AllFaults() { return kFaults; }

const Fault* FindFault(std::string_view name) {
  for (const Fault* f : kFaults) {
    if (f->name == name) return f;
  }
  return nullptr;
}

std::string FaultNames() {
  std::string names;
  for (const Fault* f : kFaults) {
    if (!names.empty()) names += ", ";
    names += f->name;
  }
  return names;
}

}  // namespace dedupsim::explore
