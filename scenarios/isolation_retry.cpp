// isolation-retry: the inbox consumer at the session's isolation level (--isolation on
// PostgreSQL) with two deliveries at once. Two orders for the same book: under REPEATABLE
// READ and SERIALIZABLE, B's stock UPDATE waits for A's row and then fails with 40001
// (serialization failure) once A commits; without a retry loop the delivery fails (nack,
// redelivery), with one it runs again and succeeds. One message twice at once, with
// retries: the inbox still processes it once. check-then-process, whose steps are
// separate transactions, twice at once with the same retry loop: measured, not assumed.
#include <fmt/format.h>

#include "common.h"
#include "concurrency.h"
#include "consumers/check_then_process.h"
#include "consumers/idempotent.h"
#include "consumers/retry.h"
#include "scenarios.h"
#include "store/error.h"

namespace dedupsim {
namespace isolation_retry_file {
namespace {

constexpr int kMaxAttempts = 3;

// One delivery's run: what it returned, how many attempts, the retryable codes it met,
// and the code that made it fail ("" when it did not).
nlohmann::json Report(bool processed, const RetryReport& retry, const std::string& failed) {
  return {{"processed", processed},
          {"attempts", retry.attempts},
          {"sqlstates", retry.sqlstates},
          {"failed", failed}};
}

enum class Consumer { kInbox, kCheckThenProcess };

// A delivery's body for RunStorePair: the consumer, with (max_attempts > 1) or without a
// retry loop; a failure is kept in the report (the broker would redeliver), not thrown.
// copies: m is delivered twice, so each outcome is right when the order took effect once,
// read back after it (a refused copy included); else m is one of two orders, right when
// it was processed, and a failure is not judged (the broker redelivers it).
std::function<nlohmann::json(Store&, const Hook&)> Body(ScenarioEnv& env, const OrderPlaced& m,
                                                        Consumer consumer, int max_attempts,
                                                        bool copies) {
  return [&env, m, consumer, max_attempts, copies](Store& store,
                                                   const Hook& hold) -> nlohmann::json {
    auto once = [&env, &m] { return ReservedVerdictApart(env, m); };
    RetryReport retry;
    bool processed = false;
    std::string failed;
    try {
      processed = RunWithRetries<bool>(store, max_attempts, retry, [&]() -> bool {
        if (consumer == Consumer::kInbox) {
          IdempotentReserveStock c(store, env.clock);
          c.before_commit = hold;
          return c.Handle(m);
        }
        CheckThenProcessReserveStock c(store, env.clock);
        c.after_stock_committed = hold;
        return c.Handle(m);
      });
      NoteProcessed(store, processed, copies ? once() : processed ? kVerdictRight : kVerdictWrong);
    } catch (const StoreError& e) {
      failed = e.backend_code();
      retry.sqlstates.push_back(e.backend_code());
      NoteOutcome(store, "Failed: " + failed + ", nacked", copies ? once() : "");
    }
    return Report(processed, retry, failed);
  };
}

struct Part {
  nlohmann::json first, second;
  bool second_waited = false;
  std::string waited_on;
};

// to_a, to_b: the broker's deliveries, where a broker handed them out; without, the part
// plays the broker: the first delivery of each, or the first and second of one message.
Part RunPart(ScenarioEnv& env, const OrderPlaced& a, const OrderPlaced& b, Consumer consumer,
             int max_attempts, DeliveryRef to_a = {}, DeliveryRef to_b = {}) {
  const bool copies = a.message_id == b.message_id;
  if (to_a.number == 0) to_a = Delivered(a, 1);
  if (to_b.number == 0) to_b = Delivered(b, copies ? 2 : 1);
  PairOutcome pair =
      RunStorePair(env, {"A", to_a, Body(env, a, consumer, max_attempts, copies)},
                   {"B", to_b, Body(env, b, consumer, max_attempts, copies)});
  return {pair.first.value, pair.second.value, pair.SecondWaited(), pair.SecondWaitedOn()};
}

std::string Attempts(const nlohmann::json& r) {
  const int attempts = r["attempts"].get<int>();
  std::string codes;
  for (const auto& c : r["sqlstates"]) codes += (codes.empty() ? "" : ", ") + c.get<std::string>();
  return fmt::format("{} attempt{}{}", attempts, attempts == 1 ? "" : "s",
                     codes.empty() ? "" : " (" + codes + ")");
}

std::string LevelName(ScenarioEnv& env) {
  if (!OnServer(env)) return "sqlite (one writer)";
  std::unique_ptr<Store> store = env.backend.Open(nullptr, "probe");
  return std::string(ToString(store->isolation()));
}

Outcome Run(ScenarioEnv& env) {
  Outcome out;
  const int64_t q = env.options.quantity;
  out.figures["isolation"] = LevelName(env);
  out.figures["maxAttempts"] = kMaxAttempts;

  // 1. Two orders for Dune at once, no retry loop: the broker hands one to A and one to B;
  // a delivery that failed is nacked (its outcome says so) and the broker redelivers it.
  env.recorder.BeginPart("two orders at once, no retry loop");
  StockItem dune = Restock(env);
  OrderPlaced first = NewOrder(env, dune), second = NewOrder(env, dune);
  std::unique_ptr<Broker> broker = OpenBroker(env, {});
  broker->Send(first);
  broker->Send(second);
  const Delivery to_a = ReceiveNext(*broker, "A's delivery");
  const Delivery to_b = ReceiveNext(*broker, "B's delivery");
  Part plain = RunPart(env, first, second, Consumer::kInbox, 1,
                       Delivered(to_a.message, to_a.delivery_count),
                       Delivered(to_b.message, to_b.delivery_count));
  auto settle = [&broker](const Delivery& d, const nlohmann::json& report) {
    if (report["failed"].get<std::string>().empty()) {
      broker->Ack(d);
    } else {
      broker->Abandon(d);  // "Failed: 40001, nacked"
    }
  };
  settle(to_a, plain.first);
  settle(to_b, plain.second);
  bool redelivered = false;
  const bool plain_failed = !plain.second["failed"].get<std::string>().empty();
  if (plain_failed) {
    const Delivery again = ReceiveNext(*broker, "B's redelivery");
    std::unique_ptr<Store> store = OpenStore(env, "B", Delivered(again.message, again.delivery_count));
    redelivered = IdempotentReserveStock(*store, env.clock).Handle(second);
    // Both orders took effect once each, read back now.
    NoteProcessed(*store, redelivered,
                  ReservedVerdict(env, dune, first.quantity + second.quantity));
    broker->Ack(again);
  }
  out.figures["noRetry"] = {{"first", plain.first},
                            {"second", plain.second},
                            {"secondWaitedOn", plain.waited_on},
                            {"redelivered", plain_failed},
                            {"redeliveryProcessed", redelivered},
                            {"reserved", CurrentStock(env, dune).reserved}};

  // 2. The same with a retry loop.
  env.recorder.BeginPart("two orders at once, retry loop");
  dune = Restock(env);
  first = NewOrder(env, dune);
  second = NewOrder(env, dune);
  Part retried = RunPart(env, first, second, Consumer::kInbox, kMaxAttempts);
  out.figures["withRetry"] = {{"first", retried.first},
                              {"second", retried.second},
                              {"secondWaitedOn", retried.waited_on},
                              {"reserved", CurrentStock(env, dune).reserved}};

  // 3. One message twice at once, retry loop: the inbox.
  env.recorder.BeginPart("one message twice at once, retry loop: inbox");
  dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  Part twice = RunPart(env, message, message, Consumer::kInbox, kMaxAttempts);
  const StockItem inbox_after = CurrentStock(env, dune);
  out.figures["sameMessage"] = {{"first", twice.first},
                                {"second", twice.second},
                                {"secondWaitedOn", twice.waited_on},
                                {"reserved", inbox_after.reserved}};

  // 4. The same for check-then-process: it holds no transaction at its hold point
  // (AfterStockCommitted), so B's whole delivery runs while A stands there, in order.
  env.recorder.BeginPart("one message twice at once, retry loop: check-then-process");
  dune = Restock(env);
  message = NewOrder(env, dune);
  Part ctp;
  {
    Hook second_delivery = [&] {
      std::unique_ptr<Store> b = OpenStore(env, "B", Delivered(message, 2));
      ctp.second = Body(env, message, Consumer::kCheckThenProcess, kMaxAttempts, true)(*b, Hook());
    };
    std::unique_ptr<Store> a = OpenStore(env, "A", Delivered(message, 1));
    ctp.first =
        Body(env, message, Consumer::kCheckThenProcess, kMaxAttempts, true)(*a, second_delivery);
    ctp.waited_on = "none";
  }
  const StockItem ctp_after = CurrentStock(env, dune);
  out.figures["checkThenProcess"] = {{"first", ctp.first},
                                     {"second", ctp.second},
                                     {"secondWaitedOn", ctp.waited_on},
                                     {"reserved", ctp_after.reserved}};
  out.figures["reserved"] = inbox_after.reserved;

  // Two orders: B's "processed" is right when both took effect, Reserved read back.
  const bool both_once = out.figures["noRetry"]["reserved"].get<int64_t>() == 2 * q;
  const bool both_once_retried = out.figures["withRetry"]["reserved"].get<int64_t>() == 2 * q;
  const std::string no_retry =
      plain_failed ? fmt::format("B failed ({}), nacked, redelivered -> processed: {}",
                                 plain.second["failed"].get<std::string>(),
                                 Judged(CsBool(redelivered), both_once))
                   : fmt::format("B {}, processed: {}", Attempts(plain.second),
                                 Judged(CsBool(plain.second["processed"].get<bool>()), both_once));
  const std::string with_retry =
      retried.second["failed"].get<std::string>().empty()
          ? fmt::format("B {}, processed: {}", Attempts(retried.second),
                        Judged(CsBool(retried.second["processed"].get<bool>()), both_once_retried))
          : fmt::format("B failed after {}", Attempts(retried.second));
  out.line = fmt::format(
      "{}{}: two orders at once, no retry -> {}; with retries -> {}; one message twice at "
      "once -> processed: {} (B {}), {}; check-then-process twice at once -> {}",
      TagColumn("isolation-retry"), out.figures["isolation"].get<std::string>(), no_retry,
      with_retry,
      // One order, two copies: right when it took effect once.
      Judged(
          BoolList({twice.first["processed"].get<bool>(), twice.second["processed"].get<bool>()}),
          inbox_after.reserved == q),
      Attempts(twice.second), JudgedReserved(inbox_after.title, inbox_after.reserved, q),
      JudgedReserved(ctp_after.title, ctp_after.reserved, q));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  // The inbox with a retry loop takes one message once; what the others do depends on the
  // level and is measured.
  return {{"reserved", o.quantity}};
}

}  // namespace
}  // namespace isolation_retry_file

const Scenario kIsolationRetryScenario{
    .name = "isolation-retry",
    .tag = "isolation-retry",
    .summary = "40001 under repeatable-read/serializable: a consumer needs a retry loop",
    .traits = kHasHold | kHasInstances | kAnyBackend,
    .run = &isolation_retry_file::Run,
    .expected = &isolation_retry_file::Expected,
    .lesson =
        "Two deliveries run at once, in the isolation level the consumers' sessions use "
        "(--isolation on PostgreSQL). A holds its transaction at BeforeCommit for --hold-ms; B "
        "starts --stagger-ms later.\n"
        "\n"
        "Two different orders for the same book: B's INSERT into the Inbox does not wait (a "
        "different key), its stock UPDATE waits for A's row. At read-committed, B then "
        "updates the row A committed. At repeatable-read and serializable, B's snapshot is "
        "older than A's commit, so PostgreSQL refuses the update with 40001 (serialization "
        "failure). Without a retry loop that delivery fails: the message is nacked and "
        "redelivered. With one, B rolls back and runs again from the start, and succeeds.\n"
        "\n"
        "One message twice at once, with the retry loop: the inbox still processes it once; a "
        "retried claim meets A's committed key. check-then-process, whose check, work and "
        "record are separate transactions, is run the same way: the isolation level of a "
        "transaction cannot protect steps that are not in it. SQLite has one writer at a "
        "time: B waits for the file and nothing fails.",
    .hook_points =
        "BeforeCommit (inbox), AfterStockCommitted (check-then-process): A holds there for "
        "--hold-ms",
    .try_next =
        "Run it at serializable, and read the retries in the trace:\n"
        "  dedupsim run isolation-retry --backend postgres --isolation serializable --trace",
};
const LessonRegistration kIsolationRetryLesson{kIsolationRetryScenario,
                                               {.rank = 360, .theme = Theme::kConcurrency}};

}  // namespace dedupsim
