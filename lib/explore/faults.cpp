#include "explore/faults.h"

#include <fmt/format.h>

#include <algorithm>
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

// ---- the class world (dedupsim check) ----

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr milliseconds kRedelivery = kLockDuration;  // after a crash or a refusal: 30 s

// The class world's shelf and its message under test (3 Dune), with ids from ids.
struct Shelf {
  std::vector<BookRow> books;  // Dune, Solaris
  LogicalOrder order;          // the message's order: 3 Dune
  OrderPlaced message;
};

Shelf ClassShelf(IdGenerator& ids) {
  Shelf shelf;
  std::string dune = ids.Next();
  std::string solaris = ids.Next();
  shelf.books = {{dune, "Dune", ClassWorld::kDuneOnHand, ClassWorld::kDuneReserved},
                 {solaris, "Solaris", ClassWorld::kSolarisOnHand, ClassWorld::kSolarisReserved}};
  shelf.order = LogicalOrder{ids.Next(), dune, ClassWorld::kQuantity};
  shelf.message = NewMessage(ids, shelf.order);
  return shelf;
}

Plan ClassPlan(const Strategy& s, const Shelf& shelf, std::string variant, TimePoint start) {
  Plan p;
  p.variant = std::move(variant);
  p.books = shelf.books;
  p.orders = {shelf.order};
  p.subscribers = {&s};
  p.start = start;
  return p;
}

Delivery Arriving(const Strategy& s, const OrderPlaced& m, size_t order, milliseconds at) {
  Delivery d;
  d.subscriber = &s;
  d.order = order;
  d.message = m;
  d.arrives_after = at;
  d.redelivered_after = kRedelivery;
  return d;
}

std::vector<Plan> GradedClean(const Strategy& s, IdGenerator& ids) {
  Shelf shelf = ClassShelf(ids);
  Plan p = ClassPlan(s, shelf, "one delivery", MorningStart());
  p.strict = true;
  p.instances.push_back({{Arriving(s, shelf.message, 0, milliseconds{0})}, -1});
  return {p};
}

std::vector<Plan> GradedDuplicate(const Strategy& s, IdGenerator& ids) {
  Shelf shelf = ClassShelf(ids);
  struct Gap {
    const char* variant;
    TimePoint start;
    milliseconds after;
  };
  const Gap gaps[] = {
      {"again 2 s later", MorningStart(), seconds{2}},
      {"again 3 h later", MorningStart(), hours{3}},
      {"again 5 s later, across midnight", BeforeMidnight(), seconds{5}},
  };
  std::vector<Plan> plans;
  for (const Gap& g : gaps) {
    Plan p = ClassPlan(s, shelf, g.variant, g.start);
    p.strict = true;  // the first had finished: the second can know
    p.instances.push_back({{Arriving(s, shelf.message, 0, milliseconds{0}),
                            Arriving(s, shelf.message, 0, g.after)},
                           -1});
    plans.push_back(std::move(p));
  }
  return plans;
}

// "crash at COMMIT", "crash at COMMIT (its 2nd)" when a step of that name came before.
std::string CrashVariant(const std::vector<std::string>& steps, size_t index) {
  int before = 0;
  for (size_t i = 0; i < index; ++i) before += steps[i] == steps[index] ? 1 : 0;
  static constexpr const char* kOrdinals[] = {"", "2nd", "3rd"};
  std::string which = before == 0   ? ""
                      : before < 3 ? std::string(" (its ") + kOrdinals[before] + ")"
                                   : fmt::format(" (its {}th)", before + 1);
  return "crash at " + steps[index] + which;
}

std::vector<Plan> GradedCrash(const Strategy& s, IdGenerator& ids) {
  Shelf shelf = ClassShelf(ids);
  std::vector<std::string> steps(s.crash_points.begin(), s.crash_points.end());
  std::vector<Plan> plans;
  for (size_t i = 0; i < steps.size(); ++i) {
    // It dies at 23:59:45 on New Year's Eve; the redelivery comes 30 s later, next year.
    Plan p = ClassPlan(s, shelf, CrashVariant(steps, i), BeforeMidnight() - seconds{13});
    Delivery d = Arriving(s, shelf.message, 0, milliseconds{0});
    d.crash_step = {static_cast<int>(i + 1)};
    p.instances.push_back({{d}, -1});
    plans.push_back(std::move(p));
  }
  return plans;
}

// The redelivery may die too: at each of the steps it took.
std::vector<Plan> CrashAgain(const Plan& plan, const std::vector<std::string>& redelivery) {
  if (plan.instances.size() != 1 || plan.instances[0].deliveries.size() != 1) return {};
  const Delivery& first = plan.instances[0].deliveries[0];
  if (first.crash_step.size() != 1) return {};  // already a second crash
  std::vector<Plan> plans;
  for (size_t k = 0; k < redelivery.size(); ++k) {
    Plan p = plan;
    p.variant = plan.variant + ", then " + CrashVariant(redelivery, k) + " on the redelivery";
    p.instances[0].deliveries[0].crash_step.push_back(static_cast<int>(k + 1));
    plans.push_back(std::move(p));
  }
  return plans;
}

std::vector<Plan> GradedConcurrent(const Strategy& s, IdGenerator& ids) {
  Shelf shelf = ClassShelf(ids);
  Plan copies = ClassPlan(s, shelf, "two copies at once", MorningStart());
  copies.instances.push_back({{Arriving(s, shelf.message, 0, milliseconds{0})}, -1});
  copies.instances.push_back({{Arriving(s, shelf.message, 0, seconds{1})}, -1});
  // Another order of the same book at the same moment: the two must not lose each other's
  // reservation.
  Plan orders = ClassPlan(s, shelf, "two orders of Dune at once", MorningStart());
  orders.strict = true;
  LogicalOrder other{ids.Next(), shelf.books[0].book_id, 2};
  orders.orders.push_back(other);
  orders.instances.push_back({{Arriving(s, shelf.message, 0, milliseconds{0})}, -1});
  orders.instances.push_back({{Arriving(s, NewMessage(ids, other), 1, seconds{1})}, -1});
  return {copies, orders};
}

std::vector<Plan> GradedProducerDuplicate(const Strategy& s, IdGenerator& ids) {
  Shelf shelf = ClassShelf(ids);
  Plan p = ClassPlan(s, shelf, "resent 2 s later under a new MessageId", MorningStart());
  OrderPlaced resent = NewMessage(ids, shelf.order);
  p.instances.push_back({{Arriving(s, shelf.message, 0, milliseconds{0}),
                          Arriving(s, resent, 0, seconds{2})},
                         -1});
  return {p};
}

std::vector<Plan> GradedOrders(const Strategy& s, IdGenerator& ids) {
  Shelf shelf = ClassShelf(ids);
  Plan p = ClassPlan(s, shelf, "four orders, one after another", MorningStart());
  p.strict = true;
  const std::string& dune = shelf.books[0].book_id;
  const std::string& solaris = shelf.books[1].book_id;
  p.orders.push_back({ids.Next(), dune, 2});                          // another Dune order
  p.orders.push_back({ids.Next(), solaris, ClassWorld::kQuantity});  // the same quantity
  p.orders.push_back({ids.Next(), dune, ClassWorld::kQuantity});     // same book and quantity
  InstanceScript script;
  script.deliveries.push_back(Arriving(s, shelf.message, 0, milliseconds{0}));
  for (size_t o = 1; o < p.orders.size(); ++o) {
    script.deliveries.push_back(
        Arriving(s, NewMessage(ids, p.orders[o]), o, seconds{10 * static_cast<int64_t>(o)}));
  }
  p.instances.push_back(std::move(script));
  return {p};
}

// The other service's consumers that share the database: the one that keeps its records in
// Inbox (keyed on MessageId and Consumer), and the one that keeps them in InboxByMessageId
// (keyed on MessageId alone), each under its own consumer name; the strategy's own partner
// first when it names another.
std::vector<const Strategy*> SharingPartners(const Strategy& s) {
  const bool stock = s.effect == "stock";
  std::vector<const Strategy*> partners;
  for (std::string_view name : {s.partner, std::string_view(stock ? "email" : "inbox"),
                                std::string_view(stock ? "shared-key-email" : "shared-key")}) {
    const Strategy* p = FindStrategy(name);
    if (p == nullptr || p->effect == s.effect) {
      throw std::logic_error("strategy " + std::string(s.name) + " names partner '" +
                             std::string(name) + "', which is no strategy of another effect");
    }
    if (std::find(partners.begin(), partners.end(), p) == partners.end()) partners.push_back(p);
  }
  return partners;
}

std::vector<Plan> GradedSecondSubscriber(const Strategy& s, IdGenerator& ids) {
  Shelf shelf = ClassShelf(ids);
  std::vector<Plan> plans;
  for (const Strategy* partner : SharingPartners(s)) {
    Plan p = ClassPlan(s, shelf, "with " + std::string(partner->name), MorningStart());
    p.strict = true;  // each has its own record: neither can meet the other's
    p.subscribers.push_back(partner);
    p.instances.push_back({{Arriving(s, shelf.message, 0, milliseconds{0})}, -1});
    p.instances.push_back({{Arriving(*partner, shelf.message, 0, seconds{1})}, -1});
    plans.push_back(std::move(p));
  }
  return plans;
}

std::vector<Plan> GradedLostAck(const Strategy& s, IdGenerator& ids) {
  Shelf shelf = ClassShelf(ids);
  Delivery first = Arriving(s, shelf.message, 0, milliseconds{0});
  first.ack_lost = true;
  Delivery again = Arriving(s, shelf.message, 0, kLockDuration);
  Plan after = ClassPlan(s, shelf, "again 30 s later, after the first finished", MorningStart());
  after.strict = true;
  after.instances.push_back({{first}, -1});
  after.instances.push_back({{again}, 0});
  // The first was slow: its lock expired while it still worked, and the second copy runs
  // beside it.
  Plan overlap =
      ClassPlan(s, shelf, "again 30 s later, while the first still works", MorningStart());
  overlap.instances.push_back({{first}, -1});
  overlap.instances.push_back({{again}, -1});
  return {after, overlap};
}

const Fault kClean{"clean", "one delivery, nothing goes wrong: it must be processed", nullptr,
                   nullptr, &GradedClean};
const Fault kOrders{"orders",
                    "four orders one after another: two of Dune (3, 2), one of Solaris (3), "
                    "another of Dune (3)",
                    nullptr, nullptr, &GradedOrders};

const Fault kDuplicate{"duplicate", "the same message delivered twice in a row", &Duplicate,
                       nullptr, &GradedDuplicate, nullptr,
                       "; again 2 s, 3 h later, and across midnight"};
const Fault kCrash{"crash",
                   "the instance dies at each crash point in turn; redelivered until acked",
                   &Crash,
                   nullptr,
                   &GradedCrash,
                   &CrashAgain,
                   "; the redelivery dies too, at each of its steps"};
const Fault kConcurrent{"concurrent",
                        "two copies at once in two instances, every interleaving the database "
                        "allows",
                        &Concurrent,
                        &ConcurrentSized,
                        &GradedConcurrent,
                        nullptr,
                        "; and two orders of one book at once"};
const Fault kProducerDuplicate{"producer-duplicate",
                               "the producer sends the order again under a new MessageId",
                               &ProducerDuplicate, nullptr, &GradedProducerDuplicate};
const Fault kSecondSubscriber{
    "second-subscriber",
    "pub/sub: the other service's consumer handles the same message, same database and Inbox",
    &SecondSubscriber,
    nullptr,
    &GradedSecondSubscriber,
    nullptr,
    "; once with its records in Inbox, once in InboxByMessageId"};
const Fault kLostAck{"lost-ack",
                     "processed, the ack lost; another instance gets it when the lock expires",
                     &LostAck,
                     nullptr,
                     &GradedLostAck,
                     nullptr,
                     "; once after the first finished, once while it still works"};

constexpr std::array<const Fault*, 6> kFaults{
    &kDuplicate, &kCrash, &kConcurrent, &kProducerDuplicate, &kSecondSubscriber, &kLostAck};
constexpr std::array<const Fault*, 8> kGradedFaults{
    &kClean,           &kDuplicate,         &kCrash,   &kConcurrent,
    &kOrders,          &kSecondSubscriber, &kLostAck, &kProducerDuplicate};

}  // namespace

std::span<const Fault* const> AllFaults() { return kFaults; }
std::span<const Fault* const> GradedFaults() { return kGradedFaults; }

const Fault* FindFault(std::string_view name, std::span<const Fault* const> among) {
  for (const Fault* f : among) {
    if (f->name == name) return f;
  }
  return nullptr;
}

std::string FaultNames(std::span<const Fault* const> among) {
  std::string names;
  for (const Fault* f : among) {
    if (!names.empty()) names += ", ";
    names += f->name;
  }
  return names;
}

TimePoint MorningStart() {
  return std::chrono::sys_days{std::chrono::year{2026} / 1 / 5} + std::chrono::hours{9};
}

TimePoint BeforeMidnight() {
  return std::chrono::sys_days{std::chrono::year{2025} / 12 / 31} + std::chrono::hours{23} +
         std::chrono::minutes{59} + std::chrono::seconds{58};
}

Plan GradedCleanPlan(const Strategy& strategy, IdGenerator& ids) {
  return GradedClean(strategy, ids).front();
}

}  // namespace dedupsim::explore
