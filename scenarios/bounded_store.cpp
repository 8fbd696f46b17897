// bounded-store: the dedup keys kept in a store with room for N keys (an in-memory LRU, as
// Camel's memory repository). After N other messages, the first key has been evicted and
// its duplicate is processed again. With one message fewer in between, it is caught.
#include <fmt/format.h>

#include <memory>
#include <set>

#include "world/broker/broker.h"
#include "common.h"
#include "consumers/bounded_dedup.h"
#include "scenarios.h"

namespace dedupsim {
namespace bounded_store_file {
namespace {

struct Part {
  int others = 0;
  bool duplicate_processed = false;
  int64_t evictions = 0;
  int64_t orders = 0;
  int64_t reserved = 0;
};

// The message, then `others` different orders, then the message again (the producer's
// retry of a send it thought had failed), through one store of options.store_size keys:
// `keys`, replaced by an empty one with the reset (a sub-run before left its keys there).
Part Deliver(ScenarioEnv& env, int others, std::unique_ptr<BoundedKeyStore>& keys) {
  // Each sub-run titled by what the line says of it, so the pictures tell the two apart.
  env.recorder.BeginPart(fmt::format("room for {} keys, {} other messages between",
                                     env.options.store_size, others));
  const size_t held = keys ? keys->size() : 0;
  keys = std::make_unique<BoundedKeyStore>(static_cast<size_t>(env.options.store_size));
  // The reset says the key store was emptied only when it held keys and, read back, holds
  // none now.
  std::vector<std::string> emptied;
  if (held > 0 && keys->size() == 0) {
    emptied.push_back(fmt::format("the key store ({} key{})", held, held == 1 ? "" : "s"));
  }
  StockItem dune = Restock(env, {}, emptied).front();
  OrderPlaced first = NewOrder(env, dune);
  std::unique_ptr<Broker> broker = OpenBroker(env, BrokerOptions{});
  broker->Send(first);
  for (int i = 0; i < others; ++i) broker->Send(NewOrder(env, dune));
  broker->Send(first);
  BoundedKeyStore& store = *keys;
  Part part;
  part.others = others;
  int64_t seen = 0;
  std::set<std::string> orders;  // the orders delivered so far
  Drain(*broker, [&](const Delivery& d) {
    std::unique_ptr<Store> db = OpenStore(env, "A");
    bool processed = BoundedStoreReserveStock(*db, store).Handle(d.message);
    // Right when every order delivered so far took effect once, read back now: the
    // duplicate let through after its key was evicted reserves its order a second time.
    orders.insert(d.message.order_id);
    NoteProcessed(*db, processed, ReservedVerdict(env, dune, d.message.quantity * std::ssize(orders)));
    if (++seen == others + 2) part.duplicate_processed = processed;
    return Verdict{Disposition::kAck};
  });
  part.evictions = store.evictions();
  part.orders = others + 1;
  part.reserved = CurrentStock(env, dune).reserved;
  return part;
}

nlohmann::ordered_json ToJson(const Part& p) {
  return {{"othersBetween", p.others},
          {"duplicateProcessed", p.duplicate_processed},
          {"evictions", p.evictions},
          {"orders", p.orders},
          {"reserved", p.reserved}};
}

std::string Describe(const Part& p, int64_t quantity) {
  return fmt::format("{} other messages between: duplicate processed: {}; {} for {} orders",
                     p.others, CsBool(p.duplicate_processed),
                     JudgedReserved("Dune", p.reserved, quantity * p.orders), p.orders);
}

Outcome Run(ScenarioEnv& env) {
  const int n = env.options.store_size;
  std::unique_ptr<BoundedKeyStore> keys;
  Part full = Deliver(env, n, keys);
  Part room = Deliver(env, n - 1, keys);
  Outcome out;
  out.figures["storeSize"] = n;
  out.figures["evicted"] = ToJson(full);
  out.figures["kept"] = ToJson(room);
  out.figures["reserved"] = full.reserved;
  out.line = fmt::format("{}room for {} keys -> {}; {}", TagColumn("bounded-store"), n,
                         Describe(full, env.options.quantity),
                         Describe(room, env.options.quantity));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  const int n = o.store_size;
  return {{"storeSize", n},
          {"evicted",
           {{"othersBetween", n},
            {"duplicateProcessed", true},
            {"evictions", 2},  // the first key, then (its duplicate re-added) the next oldest
            {"orders", n + 1},
            {"reserved", (n + 2) * o.quantity}}},
          {"kept",
           {{"othersBetween", n - 1},
            {"duplicateProcessed", false},
            {"evictions", 0},
            {"orders", n},
            {"reserved", n * o.quantity}}},
          {"reserved", (n + 2) * o.quantity}};
}

}  // namespace
}  // namespace bounded_store_file

const Scenario kBoundedStoreScenario{
    .name = "bounded-store",
    .tag = "bounded-store",
    .summary =
        "dedup keys in a store with room for N: after N other messages, a duplicate gets through",
    .in_post = false,
    .traits = kHasStoreSize | kAnyBackend,
    .run = &bounded_store_file::Run,
    .expected = &bounded_store_file::Expected,
    .lesson =
        "A dedup store does not have to be a table. Some consumers keep their keys in memory, in a "
        "store with room for a fixed number of keys (--store-size) that forgets the least recently "
        "used one when it is full, as Apache Camel's memory idempotent repository does.\n"
        "\n"
        "The first order is processed and its key stored. Then N other orders arrive, N being the "
        "store's size, and each one's key pushes an older one out: the last of them evicts the "
        "first order's key. When the first order's duplicate arrives (a producer retrying a send "
        "it thought had failed), the store has no memory of it, and it is processed again. With "
        "one other order fewer in between, the key is still there and the duplicate is skipped.\n"
        "\n"
        "Compare retention, where the Inbox forgets by age: a time window can be set against how "
        "late a duplicate can arrive. A size bound cannot: how far back it remembers depends on "
        "how busy the queue is, so the same duplicate is caught on a quiet day and processed on a "
        "busy one. (An in-memory store also forgets everything at a restart.)",
    .hook_points = "none: the order of messages drives the lesson",
    .try_next =
        "A bigger store remembers further back, for a while:\n"
        "  dedupsim run bounded-store --store-size 10\n"
        "A store that forgets by time instead:\n"
        "  dedupsim run retention",
};
const LessonRegistration kBoundedStoreLesson{kBoundedStoreScenario,
                                             {.rank = 300, .theme = Theme::kRetention}};

}  // namespace dedupsim
