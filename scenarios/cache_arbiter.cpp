// cache-arbiter: the dedup record in a cache (a second SQLite file), the work in the
// inventory database. A crash between the two writes brings the failure window back; two
// copies at once get through a check-then-set, and only one gets through a set-if-absent.
#include <fmt/format.h>

#include <thread>
#include <vector>

#include "common.h"
#include "concurrency.h"
#include "consumers/cache_dedup.h"
#include "lesson/crash.h"
#include "lesson/instances.h"
#include "scenarios.h"
#include "world/dedup_cache.h"

namespace dedupsim {
namespace cache_arbiter_file {
namespace {

struct Race {
  std::vector<bool> processed;
  int64_t reserved = 0;
};

// The business's verdict on one copy of the race, read from the database as it ended
// (untraced). A copy that did the work is right when the order took effect once. A copy
// refused because the other had set the key (Skipped) is a refused duplicate: right unless
// the order already took effect twice; the other copy may not have reserved yet (set-if-
// absent: B skips while A holds at its hook), and that copy's own verdict tells whether
// it then did, once.
const char* RaceVerdict(ScenarioEnv& env, const OrderPlaced& message, bool processed) {
  if (processed) return ReservedVerdictApart(env, message.book_id, message.quantity);
  return OpenUntraced(env)->ReadStock(message.book_id).reserved <= message.quantity
             ? kVerdictRight
             : kVerdictWrong;
}

// Two copies at once: A stops at AfterCacheCheck for options.hold, B starts
// options.stagger later.
Race RunRace(ScenarioEnv& env, const SideStore& store, CacheWrite write) {
  env.recorder.BeginPart(write == CacheWrite::kCheckThenSet ? "two at once: check-then-set"
                                                            : "two at once: set-if-absent");
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  auto task = [&env, &store, &message, write](const char* instance, int delivery) {
    return StoreTask{instance, Delivered(message, delivery),
                     [&env, &store, message, write, instance, delivery](
                         Store& db, const Hook& hold_point) -> nlohmann::json {
                       std::unique_ptr<SideRecords> cache_records =
                           OpenTraced(env, store, instance, "cache", Delivered(message, delivery));
                       DedupCache cache(*cache_records, env.clock);
                       CacheDedupReserveStock consumer(db, cache, write);
                       consumer.after_cache_check = hold_point;
                       const bool processed = consumer.Handle(message);
                       NoteProcessed(db, processed, RaceVerdict(env, message, processed));
                       return processed;
                     }};
  };
  // A holds at AfterCacheCheck, where it holds no lock B could block on.
  PairOutcome pair = RunStorePair(
      env, task("A", 1), task("B", 2),
      PairTiming{.hold = env.options.hold, .stagger = env.options.stagger, .second_blocks = false});
  Race race;
  for (const InstanceResult* r : {&pair.first, &pair.second})
    race.processed.push_back(r->value.get<bool>());
  race.reserved = CurrentStock(env, dune).reserved;
  return race;
}

Outcome Run(ScenarioEnv& env) {
  std::unique_ptr<SideStore> cache_store = env.sides.Create(SideStoreKind::kCache);
  const SideStore& store = *cache_store;

  // A crash after the stock commit, before the cache write.
  env.recorder.BeginPart("crash after the stock commit");
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  CrashReport crash = RunCrashingDelivery(env, "A", "AfterStockCommitted", [&](const Hook& hook) {
    std::unique_ptr<Store> db = OpenStore(env, "A", Delivered(message, 1));
    std::unique_ptr<SideRecords> cache_records =
        OpenTraced(env, store, "A", "cache", Delivered(message, 1));
    DedupCache cache(*cache_records, env.clock);
    CacheDedupReserveStock consumer(*db, cache, CacheWrite::kCheckThenSet);
    consumer.after_stock_committed = hook;
    consumer.Handle(message);
  });
  int64_t after_crash = CurrentStock(env, dune).reserved;
  int64_t keys_after_crash;
  bool redelivery_processed;
  {
    {
      std::unique_ptr<SideRecords> probe_cache = store.Open(&env.recorder, "check");
      probe_cache->SetTraceRole(kActorProbe, "cache");
      keys_after_crash = DedupCache(*probe_cache, env.clock).Count();
    }
    std::unique_ptr<Store> db = OpenStore(env, "A", Delivered(message, 2));
    std::unique_ptr<SideRecords> cache_records =
        OpenTraced(env, store, "A", "cache", Delivered(message, 2));
    DedupCache cache(*cache_records, env.clock);
    redelivery_processed =
        CacheDedupReserveStock(*db, cache, CacheWrite::kCheckThenSet).Handle(message);
    NoteProcessed(*db, redelivery_processed, ReservedVerdict(env, dune, env.options.quantity));
  }
  int64_t reserved = CurrentStock(env, dune).reserved;

  Race check_then_set = RunRace(env, store, CacheWrite::kCheckThenSet);
  Race set_if_absent = RunRace(env, store, CacheWrite::kSetIfAbsent);

  Outcome out;
  out.figures["crashed"] = crash.crashed;
  out.figures["crashMode"] = ToString(env.options.crash_mode);
  out.figures["reservedAfterCrash"] = after_crash;
  out.figures["cacheKeysAfterCrash"] = keys_after_crash;
  out.figures["redeliveryProcessed"] = redelivery_processed;
  out.figures["reserved"] = reserved;
  out.figures["instances"] = ToString(env.options.instances);
  out.figures["holdMs"] = env.options.hold.count();
  out.figures["staggerMs"] = env.options.stagger.count();
  out.figures["checkThenSetProcessed"] = check_then_set.processed;
  out.figures["checkThenSetReserved"] = check_then_set.reserved;
  out.figures["setIfAbsentProcessed"] = set_if_absent.processed;
  out.figures["setIfAbsentReserved"] = set_if_absent.reserved;
  out.line = fmt::format(
      "{}{}, redelivered -> {}; two copies at once -> check-then-set processed: {}; "
      "set-if-absent processed: {}",
      TagColumn("cache-arbiter"),
      CrashPhrase(crash.crashed, "crash between database and cache", "AfterStockCommitted"),
      JudgedReserved(dune.title, reserved, env.options.quantity),
      // One order, two copies: right when exactly one of them was processed.
      Judged(BoolList(check_then_set.processed), check_then_set.reserved == env.options.quantity),
      Judged(BoolList(set_if_absent.processed), set_if_absent.reserved == env.options.quantity));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  nlohmann::ordered_json expected = {{"crashed", true},
                                     {"reservedAfterCrash", o.quantity},
                                     {"cacheKeysAfterCrash", 0},
                                     {"redeliveryProcessed", true},
                                     {"reserved", 2 * o.quantity},
                                     {"setIfAbsentReserved", o.quantity}};
  auto margin = std::chrono::milliseconds(50);
  if (o.hold >= o.stagger + margin) {
    // B looks while A is still between its look and its write: both find nothing.
    expected["checkThenSetProcessed"] = {true, true};
    expected["checkThenSetReserved"] = 2 * o.quantity;
  }
  if (o.stagger >= o.hold + margin) {
    // A has written its key before B looks: even the two-step write holds.
    expected["checkThenSetProcessed"] = {true, false};
    expected["checkThenSetReserved"] = o.quantity;
  }
  if (o.stagger >= std::chrono::milliseconds(20)) expected["setIfAbsentProcessed"] = {true, false};
  return expected;
}

}  // namespace
}  // namespace cache_arbiter_file

const Scenario kCacheArbiterScenario{
    .name = "cache-arbiter",
    .tag = "cache-arbiter",
    .summary = "dedup keys in a cache, work in the database: the failure window and the race come back",
    .in_post = false,
    .traits = kHasCrash | kHasInstances | kHasHold | kAnyBackend,
    .run = &cache_arbiter_file::Run,
    .expected = &cache_arbiter_file::Expected,
    .lesson =
        "Keeping dedup keys in a cache looks fast and simple. Here the cache is a second SQLite file next to the inventory database (standing in for Redis), and the consumer keeps its keys there while the stock stays in the database.\n"
        "\n"
        "No transaction spans both stores, so the failure window of check-then-process is back. The consumer checks the cache, reserves the stock (committed), and crashes before it writes the key (hook AfterStockCommitted). The cache has no key, the redelivery reserves again, and Dune ends with twice the quantity. Writing the key first instead would lose the order on a crash, as record-first shows.\n"
        "\n"
        "Then two copies at once. With check-then-set, A looks, finds nothing, and pauses (hook AfterCacheCheck, --hold-ms); B looks in that pause, also finds nothing, and both reserve. With set-if-absent (Redis SET NX), claiming and looking are one atomic step: B's claim fails and B stops. Atomic claims fix the race, but not the crash window: a cache can filter duplicates early, it cannot be the arbiter.",
    .hook_points =
        "AfterStockCommitted: stock committed, key not yet in the cache (the crash); AfterCacheCheck: instance A holds there for --hold-ms (the race)",
    .try_next =
        "Start B after A has written its key, and check-then-set lets only one through:\n"
        "  dedupsim run cache-arbiter --hold-ms 0 --stagger-ms 200",
};
const LessonRegistration kCacheArbiterLesson{kCacheArbiterScenario,
                                             {.rank = 140, .theme = Theme::kRetention}};

}  // namespace dedupsim
