// second-connection: part of the handler's work goes through a second connection, committed
// on its own. A crash before the main commit rolls back the claim and the reservation but
// not that part; the redelivery applies it again.
#include "consumers/second_connection.h"

#include <fmt/format.h>

#include <optional>
#include <vector>

#include "common.h"
#include "lesson/crash.h"
#include "scenarios.h"
#include "store/lesson_tables.h"

namespace dedupsim {
namespace second_connection_file {
namespace {

// True on a database that locks rows (a server), where the second connection may write
// while the main transaction is open without waiting for the whole database.
bool LocksRows(const ScenarioEnv& env) {
  return OnServer(env);
}

// The handler's second connection: a store on a connection of its own to the lesson's
// database, traced under the same instance and working on the same delivery, without the
// "open" step that would start a new delivery in the views.
std::unique_ptr<Store> OpenSecond(ScenarioEnv& env, const std::string& instance,
                                  const DeliveryRef& delivery) {
  std::unique_ptr<Store> second = env.backend.Open(&env.recorder, instance);
  second->SetDelivery(delivery);
  return second;
}

// The business's verdict after a delivery, read back now (untraced): right when the order
// left one audit entry and was reserved once.
const char* AuditVerdict(ScenarioEnv& env, const OrderPlaced& m) {
  std::unique_ptr<Store> db = OpenUntraced(env);
  return db->tables().CountAuditEntries(m.order_id) == 1 &&
                 db->ReadStock(m.book_id).reserved == m.quantity
             ? kVerdictRight
             : kVerdictWrong;
}

// What the second connection's audit INSERT met, as the server saw it: the lock it waited
// on, or "none"; nothing when it made no such insert.
std::optional<std::string> AuditWaitedOn(const Store& second) {
  for (const WatchedStatement& s : second.WatchedStatements()) {
    if (s.sql.rfind("INSERT INTO AuditLog", 0) == 0) return s.waited ? s.waited_on : "none";
  }
  return std::nullopt;
}

Outcome Run(ScenarioEnv& env) {
  auto [dune, message, broker, log, first] = SendOneOrder(env, "the first delivery");
  // On a row-locking server the audit entry is written (on the second connection, committed
  // by itself) while the main transaction is open, where SQLite's one writer would make it
  // wait for the whole file.
  const bool inside = LocksRows(env);
  CrashReport crash = RunCrashingDelivery(env, "A", "BeforeCommit", [&](const Hook& hook) {
    const DeliveryRef delivery = Delivered(first.message, first.delivery_count);
    std::unique_ptr<Store> db = OpenStore(env, "A", delivery);
    std::unique_ptr<Store> second = OpenSecond(env, "A", delivery);
    SecondConnectionReserveStock consumer(*db, *second, env.clock);
    consumer.audit_inside_main = inside;
    consumer.before_commit = hook;
    consumer.Handle(message);
  });
  broker->ReleaseUnacked(first);  // the consumer died before it acked: the broker redelivers
  // What the crash left, read by the scenario's check (traced as its own step).
  std::unique_ptr<Store> probe = OpenProbeStore(env);
  const int64_t audit_after_crash = probe->tables().CountAuditEntries(message.order_id);
  const int64_t inbox_after_crash = probe->tables().CountRows("Inbox");
  const int64_t reserved_after_crash = probe->ReadStock(dune.book_id).reserved;
  std::vector<bool> processed;
  std::optional<std::string> audit_waited_on;
  for (int delivery = 1; delivery < env.options.deliveries; ++delivery) {
    const Delivery d = ReceiveNext(*broker, "a redelivery");
    log.Add(d);
    std::unique_ptr<Store> db = OpenStore(env, "A");  // the broker's delivery
    std::unique_ptr<Store> second =
        OpenSecond(env, "A", Delivered(d.message, d.delivery_count));
    SecondConnectionReserveStock consumer(*db, *second, env.clock);
    consumer.audit_inside_main = inside;
    processed.push_back(consumer.Handle(d.message));
    NoteProcessed(*db, processed.back(), AuditVerdict(env, message));
    // Measured on the redelivery, which runs in this process whatever the crash mode.
    if (inside && !audit_waited_on) audit_waited_on = AuditWaitedOn(*second);
    // Each but the last loses its ack on the way back, so the broker delivers again.
    if (delivery + 1 < env.options.deliveries) {
      broker->LoseAck(d);
    } else {
      broker->Ack(d);
    }
  }
  // The final figures, read by the scenario's check.
  const int64_t audit = probe->tables().CountAuditEntries(message.order_id);
  const int64_t inbox = probe->tables().CountRows("Inbox");
  const int64_t reserved = probe->ReadStock(dune.book_id).reserved;

  Outcome out;
  out.figures["crashed"] = crash.crashed;
  out.figures["crashMode"] = ToString(env.options.crash_mode);
  out.figures["deliveries"] = env.options.deliveries;
  out.figures["auditEntriesAfterCrash"] = audit_after_crash;
  out.figures["inboxRowsAfterCrash"] = inbox_after_crash;
  out.figures["reservedAfterCrash"] = reserved_after_crash;
  out.figures["redeliveriesProcessed"] = processed;
  out.figures["auditEntries"] = audit;
  out.figures["inboxRows"] = inbox;
  out.figures["reserved"] = reserved;
  out.figures["broker"] = log.Figures(*broker);
  out.figures["auditWritten"] =
      inside ? "while the main transaction was open" : "before the main transaction";
  if (audit_waited_on) out.figures["auditWaitedOn"] = *audit_waited_on;
  out.line = fmt::format(
      "{}crash before the main commit -> after the crash: audit entries: {}, inbox rows: {}, {} "
      "reserved: {}; redelivered, processed: {} -> {}, {}",
      TagColumn("second-connection"), audit_after_crash, inbox_after_crash, dune.title,
      reserved_after_crash, processed.empty() ? "-" : BoolList(processed),
      // One order: one audit entry is right; the crashed try's entry doubles it.
      Judged(fmt::format("audit entries: {}", audit), audit == 1),
      JudgedReserved(dune.title, reserved, env.options.quantity));
  if (audit_waited_on) {
    // Measured by the server: SQLite would have made this insert wait for the whole file.
    out.line +=
        fmt::format("; redelivery's audit insert, made while the main transaction was open, "
                    "waited on: {}",
                    *audit_waited_on);
  }
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  // Only the first redelivery finds no key; it writes the audit entry a second time.
  std::vector<bool> processed(static_cast<size_t>(o.deliveries - 1), false);
  if (!processed.empty()) processed.front() = true;
  const bool redelivered = o.deliveries >= 2;
  return {{"crashed", true},
          {"auditEntriesAfterCrash", 1},
          {"inboxRowsAfterCrash", 0},
          {"reservedAfterCrash", 0},
          {"redeliveriesProcessed", processed},
          {"auditEntries", redelivered ? 2 : 1},
          {"inboxRows", redelivered ? 1 : 0},
          {"reserved", redelivered ? o.quantity : 0}};
}

}  // namespace
}  // namespace second_connection_file

const Scenario kSecondConnectionScenario{
    .name = "second-connection",
    .tag = "second-connection",
    .summary =
        "part of the work through a second connection: a crash keeps it, the redelivery repeats it",
    .in_post = false,
    .traits = kHasCrash | kRepeatsDelivery | kAnyBackend,
    .run = &second_connection_file::Run,
    .expected = &second_connection_file::Expected,
    .lesson =
        "The inbox pattern protects exactly the work inside its transaction. This handler also "
        "writes an audit entry, but through a connection of its own (a second DbContext, a "
        "repository that opens its own connection, a second SaveChanges): that write commits by "
        "itself, at once.\n"
        "\n"
        "The inbox middleware looks for the key, the handler writes its audit entry through the "
        "second connection, then the main transaction claims the key and reserves the stock. The "
        "scenario crashes before the main commit (hook BeforeCommit). The claim and the "
        "reservation roll back; the audit entry stays. The redelivery finds no key, so it runs the "
        "whole handler again: one reservation, two audit entries for one order.\n"
        "\n"
        "Every write the handler makes must go through the one connection and transaction that "
        "carries the Inbox row; anything else is outside the guarantee. (On SQLite the second "
        "connection has to write before the main transaction takes the write lock, or it would "
        "wait for it; on a server database it could come anywhere, with the same result.)",
    .hook_points = "BeforeCommit: the first delivery dies with its main transaction open",
    .try_next =
        "A real process death keeps the audit entry the same way:\n"
        "  dedupsim run second-connection --crash-mode kill --trace\n"
        "More redeliveries: only the first finds the key missing:\n"
        "  dedupsim run second-connection --deliveries 4",
};
const LessonRegistration kSecondConnectionLesson{kSecondConnectionScenario,
                                                 {.rank = 240, .theme = Theme::kSideEffects}};

}  // namespace dedupsim
