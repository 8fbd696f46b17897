// record-first: the check-then-process order flipped. The record commits first, the work
// second; a crash between them leaves a record with no work, and every redelivery is
// skipped: the order is never reserved (at-most-once).
#include <fmt/format.h>

#include <vector>

#include "common.h"
#include "consumers/record_first.h"
#include "lesson/crash.h"
#include "scenarios.h"

namespace dedupsim {
namespace record_first_file {
namespace {

std::string RedeliveredPhrase(int redeliveries) {
  if (redeliveries == 0) return "not redelivered";
  if (redeliveries == 1) return "redelivered";
  return fmt::format("redelivered {} times", redeliveries);
}

Outcome Run(ScenarioEnv& env) {
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  CrashReport crash = RunCrashingDelivery(env, "A", "AfterRecordCommitted", [&](const Hook& hook) {
    std::unique_ptr<Store> store = OpenStore(env, "A", Delivered(message, 1));
    RecordFirstReserveStock consumer(*store, env.clock);
    consumer.after_record_committed = hook;
    consumer.Handle(message);
  });
  int64_t after_crash = CurrentStock(env, dune).reserved;
  int64_t inbox_after_crash = CurrentRows(env, "Inbox");
  std::vector<bool> processed;
  for (int delivery = 1; delivery < env.options.deliveries; ++delivery) {
    std::unique_ptr<Store> store = OpenStore(env, "A", Delivered(message, delivery + 1));
    processed.push_back(RecordFirstReserveStock(*store, env.clock).Handle(message));
    NoteProcessed(*store, processed.back(), ReservedVerdict(env, dune, env.options.quantity));
  }
  StockItem after = CurrentStock(env, dune);
  Outcome out;
  out.figures["crashed"] = crash.crashed;
  out.figures["crashMode"] = ToString(env.options.crash_mode);
  out.figures["deliveries"] = env.options.deliveries;
  out.figures["inboxRowsAfterCrash"] = inbox_after_crash;
  out.figures["reservedAfterCrash"] = after_crash;
  out.figures["redeliveriesProcessed"] = processed;
  out.figures["reserved"] = after.reserved;
  std::string outcome =
      processed.empty() ? "" : fmt::format("processed: {}; ", BoolList(processed));
  out.line = fmt::format("{}{}, {} -> {}{}", TagColumn("record-first"),
                         CrashPhrase(crash.crashed, "crash after record commit",
                                     "AfterRecordCommitted"),
                         RedeliveredPhrase(static_cast<int>(processed.size())), outcome,
                         JudgedReserved(after.title, after.reserved, env.options.quantity));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  // The record survived the crash, the work did not: every redelivery is skipped.
  std::vector<bool> processed(static_cast<size_t>(o.deliveries - 1), false);
  return {{"crashed", true},
          {"inboxRowsAfterCrash", 1},
          {"reservedAfterCrash", 0},
          {"redeliveriesProcessed", processed},
          {"reserved", 0}};
}

}  // namespace
}  // namespace record_first_file

const Scenario kRecordFirstScenario{
    .name = "record-first",
    .tag = "record-first",
    .summary = "record first, then work, each committed alone; a crash between loses the order",
    .in_post = false,
    .traits = kHasCrash | kRepeatsDelivery | kAnyBackend,
    .run = &record_first_file::Run,
    .expected = &record_first_file::Expected,
    .lesson =
        "A tempting repair of check-then-process: if the trouble is a crash after the work and before the record, write the record first. The consumer looks in the Inbox, commits its Inbox row, and only then reserves the stock in a second commit.\n"
        "\n"
        "The gap between two commits is still there; it just faces the other way. The scenario crashes right after the Inbox row is committed (hook AfterRecordCommitted). The record says \"done\", the stock says nothing happened. When the broker delivers the message again, the consumer finds the record and skips it, every time. The order is never reserved: the message was handled at most once, which for a reservation means lost.\n"
        "\n"
        "Moving steps around cannot close the window while they are separate commits. Only one transaction around both (the inbox scenario) does.",
    .hook_points = "AfterRecordCommitted: between the Inbox row's commit and the stock update",
    .try_next =
        "Redeliver as often as you like; nothing brings the reservation back:\n"
        "  dedupsim run record-first --deliveries 5 --crash-mode kill --trace",
};
const LessonRegistration kRecordFirstLesson{kRecordFirstScenario,
                                            {.rank = 80, .theme = Theme::kConcurrency}};

}  // namespace dedupsim
