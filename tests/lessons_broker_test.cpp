// The lessons with a second store or a broker: cache-arbiter, duplicate-as-error,
// content-mismatch, retention, broker-dedup, email-reconcile. For each, the figures and
// the exact line for the default options, and figures that move when an option changes.
#include <catch2/catch.hpp>

#include "core/message.h"
#include "lessons_support.h"
#include "scenarios.h"

namespace lessons_broker_test {

using namespace dedupsim;
using dedupsim::testing::RunLesson;
using Json = nlohmann::ordered_json;

TEST_CASE("cache-arbiter: the window and the race come back with a cache", "[lessons]") {
  auto run = RunLesson("cache-arbiter");
  CHECK(run.differences.empty());
  CHECK(run.figures()["reservedAfterCrash"] == 2);
  CHECK(run.figures()["cacheKeysAfterCrash"] == 0);
  CHECK(run.figures()["reserved"] == 4);
  CHECK(run.figures()["checkThenSetProcessed"] == Json::array({true, true}));
  CHECK(run.figures()["checkThenSetReserved"] == 4);
  CHECK(run.figures()["setIfAbsentProcessed"] == Json::array({true, false}));
  CHECK(run.figures()["setIfAbsentReserved"] == 2);
  CHECK(run.outcome.line ==
        "[cache-arbiter]      crash between database and cache, redelivered -> Dune reserved: 4; "
        "two copies at once -> check-then-set processed: True, True; set-if-absent processed: "
        "True, False");

  RunOptions apart;  // B looks after A wrote its key
  apart.hold = std::chrono::milliseconds(0);
  apart.stagger = std::chrono::milliseconds(1);  // B starts after A ended (instances.h)
  apart.quantity = 3;
  auto again = RunLesson("cache-arbiter", apart);
  CHECK(again.differences.empty());
  CHECK(again.figures()["checkThenSetProcessed"] == Json::array({true, false}));
  CHECK(again.figures()["checkThenSetReserved"] == 3);
  CHECK(again.figures()["reserved"] == 6);
}

TEST_CASE("cache-arbiter: crash and race in child processes", "[lessons]") {
  RunOptions options;
  options.crash_mode = CrashMode::kKill;
  options.instances = InstanceMode::kProcesses;
  auto run = RunLesson("cache-arbiter", options);
  CHECK(run.differences.empty());
  CHECK(run.figures()["crashMode"] == "kill");
  CHECK(run.figures()["reserved"] == 4);
  CHECK(run.figures()["setIfAbsentReserved"] == 2);
}

TEST_CASE("duplicate-as-error: throwing ends in the dead-letter queue", "[lessons]") {
  auto run = RunLesson("duplicate-as-error");
  CHECK(run.differences.empty());
  CHECK(run.figures()["throwDeliveries"] == 10);
  CHECK(run.figures()["throwDeadLettered"] == 1);
  CHECK(run.figures()["skipDeliveries"] == 2);
  CHECK(run.figures()["skipDeadLettered"] == 0);
  CHECK(run.figures()["reserved"] == 2);
  CHECK(run.outcome.line ==
        "[duplicate-as-error] ack lost, redelivered -> throw on duplicate: deliveries: 10, "
        "dead-lettered: 1, Dune reserved: 2; ack and skip: deliveries: 2, dead-lettered: 0, Dune "
        "reserved: 2");

  RunOptions options;
  options.max_deliveries = 4;
  auto again = RunLesson("duplicate-as-error", options);
  CHECK(again.differences.empty());
  CHECK(again.figures()["throwDeliveries"] == 4);
  CHECK(again.figures()["skipDeliveries"] == 2);
}

TEST_CASE("content-mismatch: same hash acked, other hash dead-lettered with an alert",
          "[lessons]") {
  auto run = RunLesson("content-mismatch");
  CHECK(run.differences.empty());
  CHECK(run.figures()["results"] == Json::array({"Processed", "Duplicate", "ContentMismatch"}));
  CHECK(run.figures()["acked"] == 2);
  CHECK(run.figures()["deadLettered"] == 1);
  REQUIRE(run.figures()["alerts"].size() == 1);
  std::string alert = run.figures()["alerts"][0];
  std::string stored = run.figures()["storedHash"];
  std::string other = run.figures()["mismatchHash"];
  CHECK(stored.size() == 16);
  CHECK(stored != other);
  CHECK(alert.find(stored) != std::string::npos);
  CHECK(alert.find(other) != std::string::npos);
  CHECK(run.figures()["reserved"] == 2);
  CHECK(run.outcome.line ==
        "[content-mismatch]   same id, same content -> Duplicate; same id, other content -> "
        "ContentMismatch (dead-lettered: 1, alerts: 1); Dune reserved: 2");

  RunOptions options;
  options.quantity = 3;
  auto again = RunLesson("content-mismatch", options);
  CHECK(again.differences.empty());
  CHECK(again.figures()["reserved"] == 3);
}

TEST_CASE("retention: a replay after the cleanup is processed again", "[lessons]") {
  auto run = RunLesson("retention");
  CHECK(run.differences.empty());
  CHECK(run.figures()["firstDeliveryProcessed"] == true);
  CHECK(run.figures()["redeliveriesSkipped"] == 9);
  CHECK(run.figures()["deadLettered"] == 1);
  CHECK(run.figures()["recordDeletedOnDay"] == 15);
  CHECK(run.figures()["replayDay"] == 20);
  CHECK(run.figures()["replayProcessed"] == true);
  CHECK(run.figures()["reserved"] == 4);
  CHECK(run.outcome.line ==
        "[retention]          kept 14 days: redelivered on day 1 -> skipped: 9, dead-lettered: 1; "
        "record deleted on day 15; replayed on day 20 -> processed: True; Dune reserved: 4");

  RunOptions longer;
  longer.retention = std::chrono::days(30);
  longer.max_deliveries = 3;
  auto kept = RunLesson("retention", longer);
  CHECK(kept.differences.empty());
  CHECK(kept.figures()["redeliveriesSkipped"] == 2);
  CHECK(kept.figures()["recordDeletedOnDay"].is_null());
  CHECK(kept.figures()["replayProcessed"] == false);
  CHECK(kept.figures()["reserved"] == 2);
  CHECK(kept.outcome.line ==
        "[retention]          kept 30 days: redelivered on day 1 -> skipped: 2, dead-lettered: 1; "
        "record still kept on day 20; replayed on day 20 -> processed: False; Dune reserved: 2");
}

TEST_CASE("broker-dedup: the window drops a resend, not a redelivery", "[lessons]") {
  auto run = RunLesson("broker-dedup");
  CHECK(run.differences.empty());
  CHECK(run.figures()["resendDropped"] == 1);
  CHECK(run.figures()["resendNaiveReserved"] == 2);
  CHECK(run.figures()["lostAckDropped"] == 0);
  CHECK(run.figures()["lostAckNaiveReserved"] == 4);
  CHECK(run.figures()["lostAckInboxReserved"] == 2);
  CHECK(run.outcome.line ==
        "[broker-dedup]       window 10m: producer resend after 1m -> dropped: 1, naive: Dune "
        "reserved: 2; ack lost, redelivered -> dropped: 0, naive: Dune reserved: 4, inbox: Dune "
        "reserved: 2");

  RunOptions narrow;
  narrow.dedup_window = std::chrono::seconds(30);
  auto again = RunLesson("broker-dedup", narrow);
  CHECK(again.differences.empty());
  CHECK(again.figures()["window"] == "30s");
  CHECK(again.figures()["resendDropped"] == 0);
  CHECK(again.figures()["resendNaiveReserved"] == 4);
}

TEST_CASE("email-reconcile: the provider's key settles a half-done record", "[lessons]") {
  auto run = RunLesson("email-reconcile");
  CHECK(run.differences.empty());
  CHECK(run.figures()["afterSendEmailsSent"] == 1);
  CHECK(run.figures()["afterSendSecondDelivery"] == "AlreadySent");
  CHECK(run.figures()["afterSendProviderKnew"] == true);
  CHECK(run.figures()["afterSendRecordCompleted"] == true);
  CHECK(run.figures()["beforeSendEmailsSent"] == 1);
  CHECK(run.figures()["beforeSendSecondDelivery"] == "Sent");
  CHECK(run.figures()["beforeSendProviderKnew"] == false);
  CHECK(run.figures()["reserved"] == 0);
  CHECK(run.outcome.line ==
        "[email-reconcile]    crash after send, redelivered -> emails sent: 1, second delivery: "
        "AlreadySent; crash before send, redelivered -> emails sent: 1, second delivery: Sent");
}

TEST_CASE("email-reconcile: the provider's record survives a killed child", "[lessons]") {
  for (CrashMode mode : {CrashMode::kExit, CrashMode::kKill}) {
    RunOptions options;
    options.crash_mode = mode;
    auto run = RunLesson("email-reconcile", options);
    INFO(ToString(mode));
    CHECK(run.differences.empty());
    CHECK(run.figures()["crashMode"] == std::string(ToString(mode)));
    CHECK(run.figures()["afterSendCrashed"] == true);
    CHECK(run.figures()["afterSendEmailsSent"] == 1);
    CHECK(run.figures()["afterSendSecondDelivery"] == "AlreadySent");
  }
}

}  // namespace lessons_broker_test
