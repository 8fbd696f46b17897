// The lessons from the field (issue 13): for each, the figures and the line for the default
// options, and the figures that move when an option changes. Each CHECK names a value a
// one-line change to the lesson's consumer or scenario would move.
#include <catch2/catch.hpp>

#include "lessons_support.h"
#include "scenarios.h"

namespace lessons_field_test {

using namespace dedupsim;
using dedupsim::testing::CliResult;
using dedupsim::testing::ReadFile;
using dedupsim::testing::RunCli;
using dedupsim::testing::RunLesson;
using Json = nlohmann::ordered_json;

TEST_CASE("concurrent-rollback: the first copy rolls back, the waiting second processes",
          "[lessons][field]") {
  auto run = RunLesson("concurrent-rollback");
  CHECK(run.differences.empty());
  CHECK(run.figures()["processed"] == Json::array({false, true}));
  CHECK(run.figures()["firstFailed"] == true);
  CHECK(run.figures()["inboxRows"] == 1);
  CHECK(run.figures()["reserved"] == 2);
  CHECK(run.figures()["secondWaited"] == true);
  CHECK(run.outcome.line ==
        "[concurrent-rollback] two copies at once, the first fails after claiming -> processed: "
        "False, True; inbox rows: 1; Dune reserved: 2; second waited for the first: True");

  RunOptions apart;  // A has rolled back before B starts: no wait, B still processes
  apart.hold = std::chrono::milliseconds(0);
  apart.stagger = std::chrono::milliseconds(200);
  apart.quantity = 3;
  auto again = RunLesson("concurrent-rollback", apart);
  CHECK(again.differences.empty());
  CHECK(again.figures()["processed"] == Json::array({false, true}));
  CHECK(again.figures()["secondWaited"] == false);
  CHECK(again.figures()["reserved"] == 3);
}

TEST_CASE("concurrent-rollback: instances as processes", "[lessons][field]") {
  RunOptions options;
  options.instances = InstanceMode::kProcesses;
  auto run = RunLesson("concurrent-rollback", options);
  CHECK(run.differences.empty());
  CHECK(run.figures()["instances"] == "processes");
  CHECK(run.figures()["processed"] == Json::array({false, true}));
  CHECK(run.figures()["reserved"] == 2);
}

TEST_CASE("poison-message: redelivered to the limit, dead-lettered, nothing recorded",
          "[lessons][field]") {
  auto run = RunLesson("poison-message");
  CHECK(run.differences.empty());
  CHECK(run.figures()["deliveries"] == 10);
  CHECK(run.figures()["handlerAttempts"] == 10);
  CHECK(run.figures()["processed"] == 0);
  CHECK(run.figures()["deadLettered"] == 1);
  CHECK(run.figures()["deadLetterReason"] == "MaxDeliveryCountExceeded");
  CHECK(run.figures()["inboxRows"] == 0);
  CHECK(run.figures()["reserved"] == 0);
  CHECK(run.outcome.line ==
        "[poison-message]     handler fails on every delivery -> deliveries: 10, dead-lettered: 1 "
        "(MaxDeliveryCountExceeded); inbox rows: 0; Dune reserved: 0");

  RunOptions options;
  options.max_deliveries = 3;
  auto again = RunLesson("poison-message", options);
  CHECK(again.differences.empty());
  CHECK(again.figures()["handlerAttempts"] == 3);
  CHECK(again.figures()["deliveries"] == 3);
}

TEST_CASE("receive-count: received N times, processed once", "[lessons][field]") {
  auto run = RunLesson("receive-count");
  CHECK(run.differences.empty());
  CHECK(run.figures()["deliveries"] == 2);
  CHECK(run.figures()["processed"] == Json::array({true, false}));
  CHECK(run.figures()["receiveCount"] == 2);
  CHECK(run.figures()["consumed"] == true);
  CHECK(run.figures()["timesProcessed"] == 1);
  CHECK(run.figures()["reserved"] == 2);
  CHECK(run.outcome.line ==
        "[receive-count]      delivered twice -> processed: True, False; Inbox ReceiveCount: 2, "
        "consumed: True; Dune reserved: 2 (processed once)");

  RunOptions options;
  options.deliveries = 5;
  options.quantity = 3;
  auto again = RunLesson("receive-count", options);
  CHECK(again.differences.empty());
  CHECK(again.figures()["receiveCount"] == 5);
  CHECK(again.figures()["deliveries"] == 5);
  CHECK(again.figures()["reserved"] == 3);
  CHECK(again.figures()["inboxRows"] == 1);
}

TEST_CASE("optimistic-email: both copies send, the claim-first email sends once",
          "[lessons][field]") {
  auto run = RunLesson("optimistic-email");
  CHECK(run.differences.empty());
  CHECK(run.figures()["optimisticOutcomes"] == Json::array({"Sent", "AlreadySent"}));
  CHECK(run.figures()["optimisticEmails"] == 2);
  CHECK(run.figures()["optimisticInboxRows"] == 1);
  CHECK(run.figures()["claimFirstOutcomes"] == Json::array({"Sent", "NeedsReconciliation"}));
  CHECK(run.figures()["claimFirstEmails"] == 1);
  CHECK(run.outcome.line ==
        "[optimistic-email]   two copies at once -> key decides at commit: Sent, AlreadySent, "
        "emails sent: 2; claim first: Sent, NeedsReconciliation, emails sent: 1");

  RunOptions apart;  // A has committed before B looks: one email either way
  apart.hold = std::chrono::milliseconds(0);
  apart.stagger = std::chrono::milliseconds(200);
  auto again = RunLesson("optimistic-email", apart);
  CHECK(again.differences.empty());
  CHECK(again.figures()["optimisticEmails"] == 1);
  CHECK(again.figures()["claimFirstOutcomes"] == Json::array({"Sent", "AlreadySent"}));
}

TEST_CASE("optimistic-email: in processes, each child's emails are counted", "[lessons][field]") {
  RunOptions options;
  options.instances = InstanceMode::kProcesses;
  auto run = RunLesson("optimistic-email", options);
  CHECK(run.differences.empty());
  CHECK(run.figures()["optimisticEmails"] == 2);
  CHECK(run.figures()["claimFirstEmails"] == 1);
}

TEST_CASE("outbox: one handler run, two dispatches, one downstream effect, the ghost",
          "[lessons][field]") {
  auto run = RunLesson("outbox");
  CHECK(run.differences.empty());
  CHECK(run.figures()["handlerInvocations"] == 1);
  CHECK(run.figures()["duplicatesSkipped"] == 1);
  CHECK(run.figures()["dispatcherCrashed"] == true);
  CHECK(run.figures()["dispatches"] == 2);
  CHECK(run.figures()["outboxDispatched"] == 1);
  CHECK(run.figures()["downstreamDeliveries"] == 2);
  CHECK(run.figures()["downstreamProcessed"] == 1);
  CHECK(run.figures()["shipmentRequests"] == 1);
  CHECK(run.figures()["reserved"] == 2);
  CHECK(run.figures()["ghostDispatches"] == 1);
  CHECK(run.figures()["ghostOutboxRows"] == 0);
  CHECK(run.figures()["ghostShipmentRequests"] == 1);
  CHECK(run.figures()["ghostReserved"] == 0);
  CHECK(run.outcome.line ==
        "[outbox]             delivered twice, dispatcher crashed after send -> handler ran: 1, "
        "dispatches: 2, downstream processed: 1; Dune reserved: 2; sent before commit, rolled "
        "back -> ghost messages: 1, downstream processed: 1, Dune reserved: 0");

  RunOptions options;
  options.deliveries = 4;
  auto again = RunLesson("outbox", options);
  CHECK(again.differences.empty());
  CHECK(again.figures()["handlerInvocations"] == 1);
  CHECK(again.figures()["duplicatesSkipped"] == 3);
  CHECK(again.figures()["dispatches"] == 2);
}

TEST_CASE("orphan-claim: a killed owner's claim is taken over after its lease",
          "[lessons][field]") {
  auto run = RunLesson("orphan-claim");
  CHECK(run.differences.empty());
  const Json& killed = run.figures()["killed"];
  CHECK(killed["redeliveries"] == Json::array({"BackedOff", "TakenOver"}));
  CHECK(killed["emailsSent"] == 1);
  CHECK(killed["reserved"] == 2);
  const Json& kept = run.figures()["keptAlive"];
  CHECK(kept["redeliveries"] == Json::array({"BackedOff"}));
  CHECK(kept["renewals"] == 4);  // every 10 s of a 45 s job
  CHECK(kept["emailsSent"] == 1);
  const Json& paused = run.figures()["paused"];
  CHECK(paused["redeliveries"] == Json::array({"TakenOver"}));
  CHECK(paused["firstOwner"] == "LeaseLost");
  CHECK(paused["emailsSent"] == 2);
  CHECK(paused["reserved"] == 2);
  CHECK(run.figures()["takeovers"] == 2);
  CHECK(run.outcome.line ==
        "[orphan-claim]       lease 30s -> owner killed, redelivered: BackedOff, TakenOver; emails "
        "sent: 1, Dune reserved: 2; owner renewing: BackedOff, emails sent: 1; owner paused 90s: "
        "TakenOver, then LeaseLost; emails sent: 2, Dune reserved: 2");
}

TEST_CASE("orphan-claim: the lease decides who takes over", "[lessons][field]") {
  RunOptions longer;
  longer.lock_max_age = std::chrono::minutes(2);
  auto run = RunLesson("orphan-claim", longer);
  CHECK(run.differences.empty());
  CHECK(run.figures()["killed"]["redeliveries"] == Json::array({"BackedOff", "BackedOff"}));
  CHECK(run.figures()["killed"]["reserved"] == 0);
  CHECK(run.figures()["paused"]["firstOwner"] == "Done");
  CHECK(run.figures()["paused"]["emailsSent"] == 1);
  CHECK(run.figures()["keptAlive"]["renewals"] == 1);  // every 40 s of a 45 s job

  RunOptions shorter;
  shorter.lock_max_age = std::chrono::seconds(5);
  auto again = RunLesson("orphan-claim", shorter);
  CHECK(again.differences.empty());
  CHECK(again.figures()["killed"]["redeliveries"] == Json::array({"TakenOver"}));
  CHECK(again.figures()["killed"]["emailsSent"] == 1);
}

TEST_CASE("second-connection: the audit entry survives the crash and is written again",
          "[lessons][field]") {
  auto run = RunLesson("second-connection");
  CHECK(run.differences.empty());
  CHECK(run.figures()["auditEntriesAfterCrash"] == 1);
  CHECK(run.figures()["inboxRowsAfterCrash"] == 0);
  CHECK(run.figures()["reservedAfterCrash"] == 0);
  CHECK(run.figures()["redeliveriesProcessed"] == Json::array({true}));
  CHECK(run.figures()["auditEntries"] == 2);
  CHECK(run.figures()["reserved"] == 2);
  CHECK(run.outcome.line ==
        "[second-connection]  crash before the main commit -> after the crash: audit entries: 1, "
        "inbox rows: 0, Dune reserved: 0; redelivered, processed: True -> audit entries: 2, Dune "
        "reserved: 2");

  RunOptions options;
  options.crash_mode = CrashMode::kKill;
  options.deliveries = 3;
  auto again = RunLesson("second-connection", options);
  CHECK(again.differences.empty());
  CHECK(again.figures()["auditEntriesAfterCrash"] == 1);
  CHECK(again.figures()["redeliveriesProcessed"] == Json::array({true, false}));
  CHECK(again.figures()["auditEntries"] == 2);
}

TEST_CASE("correlation-key: the cancellation is dropped as a duplicate", "[lessons][field]") {
  auto run = RunLesson("correlation-key");
  CHECK(run.differences.empty());
  CHECK(run.figures()["correlationKey"]["processed"] == Json::array({true, false, false}));
  CHECK(run.figures()["correlationKey"]["reserved"] == 2);
  CHECK(run.figures()["messageIdKey"]["processed"] == Json::array({true, false, true}));
  CHECK(run.figures()["messageIdKey"]["reserved"] == 0);
  CHECK(run.outcome.line ==
        "[correlation-key]    placed, redelivered, cancelled -> key OrderId: processed: True, "
        "False, False; Dune reserved: 2; key MessageId: processed: True, False, True; Dune "
        "reserved: 0");
}

TEST_CASE("delivery-tag-key: every delivery gets a new tag, a resend is not redelivered",
          "[lessons][field]") {
  auto run = RunLesson("delivery-tag-key");
  CHECK(run.differences.empty());
  CHECK(run.figures()["deliveryTagKey"]["processed"] == Json::array({true, true, true}));
  CHECK(run.figures()["deliveryTagKey"]["deliveryTags"] == Json::array({1, 2, 3}));
  CHECK(run.figures()["deliveryTagKey"]["redelivered"] == Json::array({false, true, false}));
  CHECK(run.figures()["deliveryTagKey"]["reserved"] == 6);
  CHECK(run.figures()["messageIdKey"]["processed"] == Json::array({true, false, false}));
  CHECK(run.figures()["messageIdKey"]["reserved"] == 2);
  CHECK(run.outcome.line ==
        "[delivery-tag-key]   delivered twice, then resent -> key delivery tag: processed: "
        "True, True, True; Dune reserved: 6; key MessageId: processed: True, False, False; Dune "
        "reserved: 2; redelivered flag: False, True, False");

  RunOptions options;
  options.deliveries = 4;
  auto again = RunLesson("delivery-tag-key", options);
  CHECK(again.differences.empty());
  CHECK(again.figures()["deliveryTagKey"]["reserved"] == 10);
  CHECK(again.figures()["messageIdKey"]["reserved"] == 2);
}

TEST_CASE("absolute-write: the upsert repeats safely, the increment does not, orders overwrite",
          "[lessons][field]") {
  auto run = RunLesson("absolute-write");
  CHECK(run.differences.empty());
  CHECK(run.figures()["reservationRows"] == 1);
  CHECK(run.figures()["absoluteReserved"] == 2);
  CHECK(run.figures()["incrementReserved"] == 4);
  CHECK(run.figures()["twoOrders"] == Json::array({2, 3}));
  CHECK(run.figures()["sharedRowReserved"] == 3);
  CHECK(run.outcome.line ==
        "[absolute-write]     delivered twice -> absolute (Quantity = 2): Dune's StockReservations: 2; "
        "increment: Dune reserved: 4; two orders (2 and 3) setting the book's Reserved: 3");

  RunOptions options;
  options.deliveries = 5;
  auto again = RunLesson("absolute-write", options);
  CHECK(again.differences.empty());
  CHECK(again.figures()["absoluteReserved"] == 2);
  CHECK(again.figures()["incrementReserved"] == 10);
}

TEST_CASE("unreconcilable: parked and settled by the operator, one email", "[lessons][field]") {
  auto run = RunLesson("unreconcilable");
  CHECK(run.differences.empty());
  CHECK(run.figures()["ackedSilently"]["redelivery"] == "NeedsReconciliation");
  CHECK(run.figures()["ackedSilently"]["deadLettered"] == 0);
  CHECK(run.figures()["ackedSilently"]["completed"] == false);
  CHECK(run.figures()["parked"]["deadLettered"] == 1);
  CHECK(run.figures()["parked"]["settled"] == "provider had sent it");
  CHECK(run.figures()["parked"]["emailsSent"] == 1);
  CHECK(run.figures()["parked"]["completed"] == true);
  CHECK(run.figures()["alerts"].size() == 1);
  CHECK(run.outcome.line ==
        "[unreconcilable]     crash after send, redelivered -> acked: NeedsReconciliation, "
        "dead-lettered: 0, record completed: False; parked: dead-lettered: 1, operator: provider "
        "had sent it, emails sent: 1, record completed: True");

  RunOptions options;
  options.crash_mode = CrashMode::kKill;
  auto again = RunLesson("unreconcilable", options);
  CHECK(again.differences.empty());
  CHECK(again.figures()["parked"]["emailsSent"] == 1);
}

TEST_CASE("bounded-store: after N others the duplicate gets through", "[lessons][field]") {
  auto run = RunLesson("bounded-store");
  CHECK(run.differences.empty());
  CHECK(run.figures()["evicted"]["duplicateProcessed"] == true);
  CHECK(run.figures()["evicted"]["evictions"] == 2);
  CHECK(run.figures()["evicted"]["reserved"] == 10);  // 4 orders, 5 reservations
  CHECK(run.figures()["kept"]["duplicateProcessed"] == false);
  CHECK(run.figures()["kept"]["evictions"] == 0);
  CHECK(run.figures()["kept"]["reserved"] == 6);
  CHECK(run.outcome.line ==
        "[bounded-store]      room for 3 keys -> 3 other messages between: duplicate processed: "
        "True; Dune reserved: 10 for 4 orders; 2 other messages between: duplicate processed: "
        "False; Dune reserved: 6 for 3 orders");

  RunOptions options;
  options.store_size = 5;
  auto again = RunLesson("bounded-store", options);
  CHECK(again.differences.empty());
  CHECK(again.figures()["evicted"]["othersBetween"] == 5);
  CHECK(again.figures()["evicted"]["reserved"] == 14);
}

// --- the command line ---

TEST_CASE("run: --lock-max-age and --store-size change the figures, and fit only their lesson",
          "[lessons][field][cli]") {
  CliResult lease = RunCli({"run", "orphan-claim", "--lock-max-age", "2m", "--check", "--format",
                            "json"});
  REQUIRE(lease.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(lease.out);
  CHECK(j["lockMaxAge"] == "2m");
  CHECK(j["paused"]["emailsSent"] == 1);

  CliResult store = RunCli({"run", "bounded-store", "--store-size", "2", "--check"});
  CHECK(store.exit_code == 0);
  CHECK(store.out.find("room for 2 keys -> 2 other messages between") != std::string::npos);

  CliResult misfit = RunCli({"run", "inbox", "--lock-max-age", "5s"});
  CHECK(misfit.exit_code == 2);
  CHECK(misfit.err.find("--lock-max-age does not apply to scenario 'inbox'") != std::string::npos);
  CliResult bad = RunCli({"run", "orphan-claim", "--lock-max-age", "500ms"});
  CHECK(bad.exit_code == 2);
  CliResult misfit_store = RunCli({"run", "poison-message", "--store-size", "4"});
  CHECK(misfit_store.exit_code == 2);
}

TEST_CASE("run: --max-deliveries changes the poison message's attempts end to end",
          "[lessons][field][cli]") {
  CliResult r = RunCli({"run", "poison-message", "--max-deliveries", "4", "--check"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("deliveries: 4, dead-lettered: 1") != std::string::npos);
}

TEST_CASE("docs/README.md lists every scenario under a theme", "[lessons][field][docs]") {
  const std::string index = ReadFile(std::string(DEDUPSIM_SOURCE_DIR) + "/docs/README.md");
  for (const Scenario* s : AllScenarios()) {
    INFO(s->name);
    CHECK(index.find("(scenarios/" + std::string(s->name) + ".md)") != std::string::npos);
  }
}

TEST_CASE("duplicate-in-transaction on SQLite: the read after a duplicate works in every style",
          "[lessons][field]") {
  auto run = RunLesson("duplicate-in-transaction");
  CHECK(run.differences.empty());
  // SQLite undoes only the failed INSERT: the plain claim's read runs (PostgreSQL: 25P02).
  CHECK(run.figures()["plainReadError"] == "");
  CHECK(run.figures()["plainRowRead"] == true);
  CHECK(run.figures()["savepointRowRead"] == true);
  CHECK(run.figures()["onConflictRowRead"] == true);
  CHECK(run.figures()["onConflictReserved"] == 2);
  CHECK(run.figures()["pairProcessed"] == Json::array({true, false}));
  CHECK(run.figures()["pairSecondWaited"] == true);
  CHECK(run.outcome.line ==
        "[duplicate-in-transaction] a read after the duplicate key -> plain insert: row read; "
        "savepoint: row read; on conflict do nothing: row read; two copies at once, on "
        "conflict: processed: True, False; second waited for the first: True");
}

}  // namespace lessons_field_test
