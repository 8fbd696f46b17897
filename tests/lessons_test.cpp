// The lessons on the consumer side: record-first, natural-key, shared-key, claim-last,
// producer-duplicate, random-id. For each, the figures and the exact line for the default
// options, and figures that move when an option changes.
#include <catch2/catch.hpp>

#include "lessons_support.h"
#include "scenarios.h"

namespace lessons_test {

using namespace dedupsim;
using dedupsim::testing::RunLesson;
using Json = nlohmann::ordered_json;

TEST_CASE("record-first: the record survives the crash, the order is never reserved",
          "[lessons]") {
  auto run = RunLesson("record-first");
  CHECK(run.differences.empty());
  CHECK(run.figures()["crashed"] == true);
  CHECK(run.figures()["inboxRowsAfterCrash"] == 1);
  CHECK(run.figures()["reservedAfterCrash"] == 0);
  CHECK(run.figures()["redeliveriesProcessed"] == Json::array({false}));
  CHECK(run.figures()["reserved"] == 0);
  CHECK(run.outcome.line ==
        "[record-first]       crash after record commit, redelivered -> processed: False; Dune "
        "reserved: 0");

  RunOptions more;
  more.deliveries = 4;
  more.quantity = 3;
  auto again = RunLesson("record-first", more);
  CHECK(again.differences.empty());
  CHECK(again.figures()["redeliveriesProcessed"] == Json::array({false, false, false}));
  CHECK(again.figures()["reserved"] == 0);
  CHECK(again.outcome.line ==
        "[record-first]       crash after record commit, redelivered 3 times -> processed: False, "
        "False, False; Dune reserved: 0");
}

TEST_CASE("record-first: a real process death gives the same outcome", "[lessons]") {
  RunOptions options;
  options.crash_mode = CrashMode::kExit;
  auto run = RunLesson("record-first", options);
  CHECK(run.differences.empty());
  CHECK(run.figures()["crashMode"] == "exit");
  CHECK(run.figures()["inboxRowsAfterCrash"] == 1);
  CHECK(run.figures()["reserved"] == 0);
}

TEST_CASE("natural-key: the reservation row dedups without an inbox", "[lessons]") {
  auto run = RunLesson("natural-key");
  CHECK(run.differences.empty());
  CHECK(run.figures()["processed"] == Json::array({true, false}));
  CHECK(run.figures()["reservations"] == 1);
  CHECK(run.figures()["inboxRows"] == 0);
  CHECK(run.figures()["reserved"] == 2);
  CHECK(run.outcome.line ==
        "[natural-key]        delivered twice -> processed: True, False; reservations: 1; Dune "
        "reserved: 2");

  RunOptions options;
  options.quantity = 3;
  options.deliveries = 3;
  auto again = RunLesson("natural-key", options);
  CHECK(again.differences.empty());
  CHECK(again.figures()["processed"] == Json::array({true, false, false}));
  CHECK(again.figures()["reserved"] == 3);
}

TEST_CASE("shared-key: keyed on MessageId, the notification is silenced", "[lessons]") {
  auto run = RunLesson("shared-key");
  CHECK(run.differences.empty());
  CHECK(run.figures()["messageIdKeyInventoryProcessed"] == true);
  CHECK(run.figures()["messageIdKeyNotification"] == "AlreadySent");
  CHECK(run.figures()["messageIdKeyEmailsSent"] == 0);
  CHECK(run.figures()["messageIdKeyInboxRows"] == 1);
  CHECK(run.figures()["perConsumerKeyNotification"] == "Sent");
  CHECK(run.figures()["perConsumerKeyEmailsSent"] == 1);
  CHECK(run.figures()["perConsumerKeyInboxRows"] == 2);
  CHECK(run.figures()["reserved"] == 2);
  CHECK(run.outcome.line ==
        "[shared-key]         key MessageId -> inventory: True, notification: AlreadySent, emails "
        "sent: 0; key (MessageId, Consumer) -> inventory: True, notification: Sent, emails sent: 1");

  RunOptions options;
  options.quantity = 3;
  auto again = RunLesson("shared-key", options);
  CHECK(again.differences.empty());
  CHECK(again.figures()["messageIdKeyReserved"] == 3);
  CHECK(again.figures()["perConsumerKeyReserved"] == 3);
}

TEST_CASE("claim-last: the second copy waits at its stock update and undoes it", "[lessons]") {
  auto run = RunLesson("claim-last");
  CHECK(run.differences.empty());
  CHECK(run.figures()["processed"] == Json::array({true, false}));
  CHECK(run.figures()["reserved"] == 2);
  CHECK(run.figures()["secondWaitedAt"] == "stock update");
  CHECK(run.figures()["secondWaited"] == true);
  CHECK(run.figures()["secondStockUpdateChanges"] == 1);
  CHECK(run.figures()["secondReservedInside"] == 4);
  CHECK(run.figures()["secondRolledBack"] == true);
  CHECK(run.figures()["busyRetries"].get<int64_t>() > 0);
  CHECK(run.outcome.line ==
        "[claim-last]         two copies at once -> processed: True, False; Dune reserved: 2; "
        "second waited at: stock update; its update changed 1 row (Dune reserved: 4 inside its "
        "transaction), then rolled back");

  RunOptions apart;  // A commits before B starts: B waits nowhere, and still works first
  apart.hold = std::chrono::milliseconds(0);
  apart.stagger = std::chrono::milliseconds(1);  // B starts after A ended (instances.h)
  apart.quantity = 3;
  auto again = RunLesson("claim-last", apart);
  CHECK(again.differences.empty());
  CHECK(again.figures()["secondWaitedAt"] == "nowhere");
  CHECK(again.figures()["secondWaited"] == false);
  CHECK(again.figures()["secondReservedInside"] == 6);
  CHECK(again.figures()["reserved"] == 3);
}

TEST_CASE("claim-last: instances as processes", "[lessons]") {
  RunOptions options;
  options.instances = InstanceMode::kProcesses;
  auto run = RunLesson("claim-last", options);
  CHECK(run.differences.empty());
  CHECK(run.figures()["instances"] == "processes");
  CHECK(run.figures()["secondWaitedAt"] == "stock update");
  CHECK(run.figures()["reserved"] == 2);
}

TEST_CASE("producer-duplicate: inbox reserves twice, natural key once", "[lessons]") {
  auto run = RunLesson("producer-duplicate");
  CHECK(run.differences.empty());
  CHECK(run.figures()["messageIds"] == 2);
  CHECK(run.figures()["inboxReserved"] == 4);
  CHECK(run.figures()["naturalKeyReserved"] == 2);
  CHECK(run.outcome.line ==
        "[producer-duplicate] same order, 2 message ids -> inbox: processed: True, True; Dune "
        "reserved: 4; natural key: processed: True, False; Dune reserved: 2");

  RunOptions options;
  options.quantity = 3;
  auto again = RunLesson("producer-duplicate", options);
  CHECK(again.differences.empty());
  CHECK(again.figures()["inboxReserved"] == 6);
  CHECK(again.figures()["naturalKeyReserved"] == 3);
}

TEST_CASE("random-id: a fresh id per send defeats the inbox, an id made once does not",
          "[lessons]") {
  auto run = RunLesson("random-id");
  CHECK(run.differences.empty());
  CHECK(run.figures()["newIdMessageIds"] == 2);
  CHECK(run.figures()["newIdReserved"] == 4);
  CHECK(run.figures()["madeOnceMessageIds"] == 1);
  CHECK(run.figures()["madeOnceReserved"] == 2);
  CHECK(run.outcome.line ==
        "[random-id]          producer sent twice -> new id per send: message ids: 2, processed: "
        "True, True; Dune reserved: 4; id made once: message ids: 1, processed: True, False; Dune "
        "reserved: 2");

  RunOptions options;
  options.quantity = 3;
  auto again = RunLesson("random-id", options);
  CHECK(again.differences.empty());
  CHECK(again.figures()["newIdReserved"] == 6);
  CHECK(again.figures()["madeOnceReserved"] == 3);
}

}  // namespace lessons_test
