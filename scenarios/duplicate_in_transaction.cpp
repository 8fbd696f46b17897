// duplicate-in-transaction: after its claim meets a duplicate key, the inbox consumer reads
// the existing row in the same transaction (to log when the message was done). Three ways to
// claim: a plain INSERT, an INSERT under a SAVEPOINT, INSERT ... ON CONFLICT DO NOTHING. On
// PostgreSQL the plain INSERT's 23505 aborts the whole transaction, so the read fails with
// 25P02; SQLite undoes only the failed statement. Then two copies at once with ON CONFLICT:
// the second waits for the first's key as a plain INSERT would, and reports 0 rows.
#include <fmt/format.h>

#include "common.h"
#include "concurrency.h"
#include "consumers/idempotent.h"
#include "consumers/naive.h"
#include "scenarios.h"
#include "store/error.h"

namespace dedupsim {
namespace duplicate_in_transaction_file {
namespace {

enum class ClaimStyle { kPlain, kSavepoint, kOnConflict };

// What one delivery did.
struct ClaimReport {
  bool processed = false;
  bool duplicate = false;
  bool row_read = false;        // the read after the duplicate found the row
  std::string read_error;       // the read's error code ("25P02"), "" when it ran
  std::string read_error_kind;  // store/error.h's name of it ("transaction-aborted")
};

// The inbox consumer, claiming in `style`; on a duplicate it reads the existing row in the
// same transaction before rolling back.
ClaimReport Handle(Store& store, Clock& clock, const OrderPlaced& m, ClaimStyle style,
                   const Hook& before_commit) {
  static constexpr const char* kName = IdempotentReserveStock::kName;
  constexpr InboxKey kKey = InboxKey::kMessageIdAndConsumer;
  ClaimReport report;
  ScopedTransaction tx(store);
  InsertResult claim = InsertResult::kInserted;
  switch (style) {
    case ClaimStyle::kPlain:
      claim = store.ClaimCompleted(kKey, m.message_id, kName, clock.Now());
      break;
    case ClaimStyle::kSavepoint:
      store.Savepoint("claim");
      claim = store.ClaimCompleted(kKey, m.message_id, kName, clock.Now());
      if (claim == InsertResult::kDuplicateKey) {
        store.RollbackToSavepoint("claim");  // undoes the failed INSERT, and its error
      } else {
        store.ReleaseSavepoint("claim");
      }
      break;
    case ClaimStyle::kOnConflict:
      claim = store.ClaimCompletedIfAbsent(kKey, m.message_id, kName, clock.Now());
      break;
  }
  if (claim == InsertResult::kDuplicateKey) {
    report.duplicate = true;
    try {
      report.row_read = store.Find(kKey, m.message_id, kName).has_value();
    } catch (const StoreError& e) {
      report.read_error = e.backend_code();
      report.read_error_kind = std::string(ToString(e.kind()));
    }
    tx.Rollback();
    return report;
  }
  AddReserved(store, m);
  store.RunHook("BeforeCommit", before_commit);
  tx.Commit();
  report.processed = true;
  return report;
}

const char* StyleName(ClaimStyle style) {
  switch (style) {
    case ClaimStyle::kPlain:
      return "plain";
    case ClaimStyle::kSavepoint:
      return "savepoint";
    case ClaimStyle::kOnConflict:
      return "onConflict";
  }
  return "";
}

// "row read", or "read failed: 25P02 (transaction-aborted)".
std::string ReadPhrase(const ClaimReport& r) {
  if (!r.read_error.empty())
    return fmt::format("read failed: {} ({})", r.read_error, r.read_error_kind);
  return r.row_read ? "row read" : "no row";
}

nlohmann::ordered_json Expected(const RunOptions& o);

Outcome Run(ScenarioEnv& env) {
  Outcome out;
  std::vector<std::string> phrases;
  // One message delivered twice, for each way to claim.
  for (ClaimStyle style : {ClaimStyle::kPlain, ClaimStyle::kSavepoint, ClaimStyle::kOnConflict}) {
    env.recorder.BeginPart(fmt::format("claim: {}", StyleName(style)));
    StockItem dune = Restock(env);
    OrderPlaced message = NewOrder(env, dune);
    ClaimReport second;
    for (int delivery = 1; delivery <= 2; ++delivery) {
      std::unique_ptr<Store> store = OpenStore(env, "A", Delivered(message, delivery));
      ClaimReport r = Handle(*store, env.clock, message, style, Hook());
      // Right when the order took effect once, read back after the delivery: the first
      // reserves it, the copy's duplicate key refuses it, whatever the read after it did.
      NoteProcessed(*store, r.processed, ReservedVerdict(env, dune, message.quantity));
      if (delivery == 2) second = r;
    }
    const std::string name = StyleName(style);
    out.figures[name + "SecondProcessed"] = second.processed;
    out.figures[name + "RowRead"] = second.row_read;
    out.figures[name + "ReadError"] = second.read_error;
    out.figures[name + "Reserved"] = CurrentStock(env, dune).reserved;
    phrases.push_back(ReadPhrase(second));
  }

  // Two copies at once, both claiming with ON CONFLICT DO NOTHING.
  env.recorder.BeginPart("two copies at once: on conflict do nothing");
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  auto copy = [&env, message](const char* name, int delivery) {
    return StoreTask{name, Delivered(message, delivery),
                     [&env, message](Store& store, const Hook& hold) -> nlohmann::json {
                       // Each copy's outcome, read back through a store of its own: right
                       // when the order took effect once (a refused copy included).
                       auto judge = [&env, &message] { return ReservedVerdictApart(env, message); };
                       const std::string isolation(ToString(store.isolation()));
                       try {
                         ClaimReport r =
                             Handle(store, env.clock, message, ClaimStyle::kOnConflict, hold);
                         NoteProcessed(store, r.processed, judge());
                         return {{"processed", r.processed},
                                 {"rowRead", r.row_read},
                                 {"isolation", isolation}};
                       } catch (const StoreError& e) {
                         // Above READ COMMITTED the key B waited on was committed after
                         // B's snapshot: ON CONFLICT cannot skip a row it may not see, and
                         // the server refuses the claim (40001).
                         nlohmann::json failed = SerializationFailure(store, e, judge);
                         failed["rowRead"] = false;
                         failed["isolation"] = isolation;
                         return failed;
                       }
                     }};
  };
  PairOutcome pair = RunStorePair(env, copy("A", 1), copy("B", 2));
  pair.first_processed = pair.first.value["processed"].get<bool>();
  pair.second_processed = pair.second.value["processed"].get<bool>();
  out.figures["pairProcessed"] = {pair.first_processed, pair.second_processed};
  out.figures["pairSecondRowRead"] = pair.second.value["rowRead"].get<bool>();
  const int64_t pair_reserved = CurrentStock(env, dune).reserved;
  out.figures["pairReserved"] = pair_reserved;
  const nlohmann::json& b = pair.second.value;
  if (b.contains("sqlstate")) out.figures["pairSecondSqlstate"] = b["sqlstate"];
  AddWaitFigures(env, pair, out.figures, "pair");
  if (SecondMeetsSerializationFailure(env, b["isolation"].get<std::string>())) {
    out.expected = Expected(env.options);
    out.expected["pairSecondRowRead"] = false;
    out.expected["pairSecondSqlstate"] = "40001";
  }

  out.line = fmt::format(
      "{}a read after the duplicate key -> plain insert: {}; savepoint: {}; on conflict do "
      "nothing: {}; two copies at once, on conflict: processed: {}; second waited for the "
      "first: {}",
      TagColumn("duplicate-in-transaction"), phrases[0], phrases[1], phrases[2],
      // One order, two copies: right when the order took effect once.
      Judged(BoolList({pair.first_processed, pair.second_processed}),
             pair_reserved == env.options.quantity),
      CsBool(pair.SecondWaited()));
  if (b.contains("sqlstate"))
    out.line += fmt::format(", then its claim failed with {} (serialization failure, {})",
                            b["sqlstate"].get<std::string>(), b["isolation"].get<std::string>());
  if (pair.watched) out.line += fmt::format(" (on: {})", pair.SecondWaitedOn());
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  // The plain insert's read depends on the backend (SQLite: read; PostgreSQL: 25P02), so it
  // is not checked here; the savepoint and ON CONFLICT keep the transaction usable on both.
  nlohmann::ordered_json expected = {
      {"plainSecondProcessed", false},      {"plainReserved", o.quantity},
      {"savepointSecondProcessed", false},  {"savepointRowRead", true},
      {"savepointReadError", ""},           {"savepointReserved", o.quantity},
      {"onConflictSecondProcessed", false}, {"onConflictRowRead", true},
      {"onConflictReadError", ""},          {"onConflictReserved", o.quantity},
      {"pairProcessed", {true, false}},     {"pairSecondRowRead", true},
      {"pairReserved", o.quantity}};
  expected["pairSecondWaited"] = ExpectedWait(o)["secondWaited"];
  return expected;
}

}  // namespace
}  // namespace duplicate_in_transaction_file

const Scenario kDuplicateInTransactionScenario{
    .name = "duplicate-in-transaction",
    .tag = "duplicate-in-transaction",
    .summary =
        "after a duplicate key, read on in the same transaction: plain insert, savepoint, "
        "ON CONFLICT DO NOTHING (PostgreSQL aborts the plain one: 25P02)",
    .in_post = false,
    .traits = kHasInstances | kHasHold | kAnyBackend,
    .run = &duplicate_in_transaction_file::Run,
    .expected = &duplicate_in_transaction_file::Expected,
    .lesson =
        "The inbox consumer meets a duplicate key and, before it rolls back, wants one more "
        "statement in the same transaction: here it reads the existing Inbox row, as a consumer "
        "would to log when the message was done. Whether it can depends on the database and on "
        "how it claimed the key. Each way to claim gets the same message twice.\n"
        "\n"
        "Plain INSERT: SQLite undoes only the failed statement, so the read works. PostgreSQL "
        "aborts the whole transaction on the 23505: every later statement fails with 25P02 "
        "(\"current transaction is aborted\") until ROLLBACK. A consumer ported from SQLite that "
        "does anything after the duplicate breaks there.\n"
        "\n"
        "INSERT under a SAVEPOINT: rolling back to the savepoint undoes the failed INSERT and its "
        "error, and the transaction goes on, on both databases. INSERT ... ON CONFLICT DO NOTHING: "
        "no error at all, the INSERT reports 0 rows, and that is the duplicate.\n"
        "\n"
        "ON CONFLICT does not skip the race. In the last part two copies claim at once: the "
        "second's INSERT ... ON CONFLICT DO NOTHING waits for the first's uncommitted key just "
        "as a plain INSERT does (on SQLite for the write lock), and once the first commits it "
        "reports 0 rows and the second skips.",
    .hook_points =
        "BeforeCommit: in the last part, instance A holds its open transaction there "
        "for --hold-ms",
    .try_next =
        "Run it on PostgreSQL, where the plain insert's read fails with 25P02:\n"
        "  dedupsim run duplicate-in-transaction --backend postgres --trace",
};
const LessonRegistration kDuplicateInTransactionLesson{kDuplicateInTransactionScenario,
                                                       {.rank = 340, .theme = Theme::kConcurrency}};

}  // namespace dedupsim
