// The `nats` tests: dedupsim on NATS JetStream, each command with its own private
// nats-server (started in about 0.1 s, in the test's own TMPDIR), or a server a test starts
// itself for --broker-url. They fail, never skip, without nats-server or libnats:
// `sh tools/setup.sh --tests` installs nats-server and libnats-dev.
#include <nats/nats.h>
#include <signal.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "world/broker/nats_broker.h"
#include "world/broker/nats_server.h"
#include "broker_support.h"
#include "postgres/cluster.h"
#include "exit_status.h"

namespace nats_test {

using dedupsim::testing::BackgroundRun;
using dedupsim::testing::Listing;
using dedupsim::testing::PostLines;
using dedupsim::testing::ProcessesMentioningAfter;
using dedupsim::testing::RunCli;
using dedupsim::testing::SplitLines;
using dedupsim::testing::TempDir;

namespace {

std::vector<nlohmann::json> JsonLines(const std::string& out) {
  std::vector<nlohmann::json> lines;
  for (const std::string& line : SplitLines(out)) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

}  // namespace

// Mutations caught: LoseAck acking after all (natsMsg_Ack: the server never redelivers, the
// lessons' redeliveries never come: exit 3); redelivered read as a constant; the delivery
// count taken from our own counter instead of num_delivered (the kill mode's child would
// not change it, but a redelivery the server did not make would still count 2: checked by
// the Ack mutation above).
TEST_CASE("run all --broker nats: the post's six lines, every lost ack redelivered by the server",
          "[nats]") {
  TempDir tmp;
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{}, std::vector<std::string>{"--crash-mode", "kill", "--instances", "processes"}}) {
    std::vector<std::string> args{"run", "all", "--broker", "nats", "--format", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = RunCli(args, {"NO_COLOR=1", "TMPDIR=" + tmp.path()});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    std::vector<nlohmann::json> results = JsonLines(r.out);
    REQUIRE(results.size() == 6);
    std::vector<std::string> post = PostLines();
    for (size_t i = 0; i < results.size(); ++i) {
      const nlohmann::json& j = results[i];
      INFO(j.dump());
      CHECK(j["line"] == post[i]);
      CHECK(j["broker"]["server"] == "NATS JetStream 2.9.10");
      // One lost ack each: the first delivery and the server's redelivery.
      CHECK(j["broker"]["deliveryCounts"] == nlohmann::json::array({1, 2}));
      CHECK(j["broker"]["redelivered"] == nlohmann::json::array({false, true}));
      // The consumer sequence: a new one for the redelivery.
      CHECK(j["broker"]["deliveryTags"] == nlohmann::json::array({1, 2}));
    }
  }
  CHECK(Listing(tmp.path()).empty());  // the server's folder went with it
}

// A consumer that never acks (ReleaseUnacked) sends nothing: the server acts only once
// AckWait ran out, so the "no ack" step is recorded when that is seen, just before the
// redelivery, never while the consumer is still at work (concurrent: A in its transaction
// until 600 ms; batch-ack: the three at the crash).
// Mutation caught: NatsBroker::LoseAck noting the "unacked" step at once instead of
// queueing it for NoteUnacked (the old code): at 1-2 ms after the delivery, not AckWait
// after it, and not just before the redelivery.
TEST_CASE("on NATS, a delivery nobody acked is said unacked when the server redelivers it, AckWait after the delivery",
          "[nats]") {
  TempDir tmp;
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{}, std::vector<std::string>{"--crash-mode", "kill", "--instances", "processes"}}) {
    std::vector<std::string> args{"run", "concurrent", "batch-ack", "--broker", "nats", "--seed", "1",
                                  "--format", "json", "--trace"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = RunCli(args, {"NO_COLOR=1", "TMPDIR=" + tmp.path()});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    int unacked = 0;
    for (const nlohmann::json& result : JsonLines(r.out)) {
      const nlohmann::json& events = result["events"];
      for (size_t i = 0; i < events.size(); ++i) {
        const nlohmann::json& e = events[i];
        if (e["op"] != "unacked") continue;
        INFO(e.dump());
        unacked++;
        CHECK(e["result"] == "none reached the server within AckWait 200 ms: redelivered");
        // The delivery it is about, and the redelivery right after it.
        int64_t delivered_at = -1;
        for (size_t k = 0; k < i; ++k) {
          if (events[k]["op"] == "deliver" && events[k]["key"] == e["key"] &&
              events[k]["delivery"] == e["delivery"]) {
            delivered_at = events[k]["atUs"];
          }
        }
        REQUIRE(delivered_at >= 0);
        CHECK(e["atUs"].get<int64_t>() - delivered_at >= 200000);
        REQUIRE(i + 1 < events.size());
        CHECK(events[i + 1]["op"] == "deliver");
        CHECK(events[i + 1]["key"] == e["key"]);
        CHECK(events[i + 1]["delivery"] == e["delivery"].get<int>() + 1);
      }
    }
    CHECK(unacked == 4);  // concurrent's A, batch-ack's three
  }
}

// Mutations caught: NatsServer not registered with run_files (the interrupt thread exits
// and the server and its folder stay); broker_server::Start without PR_SET_PDEATHSIG (the
// server outlives a SIGKILLed dedupsim).
TEST_CASE("an interrupt stops the private nats-server and removes its folder, and a SIGKILL takes the server down",
          "[nats]") {
  for (int signal : {SIGINT, SIGKILL}) {
    TempDir tmp;
    INFO("signal " << signal);
    BackgroundRun run({"run", "naive", "--broker", "nats"},
                      {"TMPDIR=" + tmp.path(), "DEDUPSIM_PAUSE_AT=broker-server-started", "NO_COLOR=1"});
    REQUIRE_FALSE(run.WaitForLine("paused at broker-server-started").empty());
    REQUIRE(ProcessesMentioningAfter(tmp.path() + "/dedupsim-nats-", 0).size() == 1);  // it runs
    run.Signal(signal);
    const int code = run.Wait();
    INFO(run.err());
    CHECK(code == (signal == SIGINT ? dedupsim::kExitInterrupted : 128 + SIGKILL));
    CHECK(ProcessesMentioningAfter(tmp.path() + "/dedupsim-nats-", 5000).empty());
    if (signal == SIGINT) CHECK(Listing(tmp.path()).empty());
    // After a SIGKILL the folder is left (docs/brokers.md); the TempDir removes it.
  }
}

// Mutation caught: the server's pid recorded for the interrupt's cleanup after the fork
// returns instead of under the registry's lock as it is forked (spawn.record not set): an
// interrupt right after the fork leaves the server to its parent-death signal, alive when
// dedupsim has exited (a server deaf to SIGTERM shows it; nats-server itself obeys it).
TEST_CASE("an interrupt right after nats-server is forked stops and reaps it before exit 130",
          "[nats]") {
  TempDir tmp;
  const auto run = dedupsim::testing::InterruptRightAfterServerForked("nats", "DEDUPSIM_NATS_SERVER", tmp);
  INFO(run.err);
  CHECK(run.code == dedupsim::kExitInterrupted);
  // The server's folder went by its cleanup, and the line counts it (it said "removed 0
  // file(s)" alone). Mutation caught: the cleanups left out of the interrupt's line.
  CHECK(run.err.find("stopped or removed 1 server(s) or folder(s)") != std::string::npos);
  CHECK(ProcessesMentioningAfter(tmp.path() + "/dedupsim-nats-", 0).empty());  // gone at exit
  CHECK(Listing(tmp.path()).empty());
}

// Mutation caught: CreateStream without the mark check (the foreign stream is deleted and
// made anew: its message is gone).
TEST_CASE("on a server of the user's, a stream of dedupsim's name without its mark is refused and left as it was",
          "[nats]") {
  dedupsim::NatsServer server = dedupsim::NatsServer::Start();
  natsConnection* nc = nullptr;
  REQUIRE(natsConnection_ConnectTo(&nc, server.url().c_str()) == NATS_OK);
  jsCtx* js = nullptr;
  REQUIRE(natsConnection_JetStream(&js, nc, nullptr) == NATS_OK);
  // Someone else's stream, with the name dedupsim would give its first queue.
  const std::string name = "theirs-" + std::to_string(::getpid()) + "-1";
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  cfg.Name = name.c_str();
  const char* subjects[] = {"theirs.orders"};
  cfg.Subjects = subjects;
  cfg.SubjectsLen = 1;
  jsErrCode jerr{};
  jsStreamInfo* si = nullptr;
  REQUIRE(js_AddStream(&si, js, &cfg, nullptr, &jerr) == NATS_OK);
  jsStreamInfo_Destroy(si);
  jsPubAck* ack = nullptr;
  REQUIRE(js_Publish(&ack, js, "theirs.orders", "keep me", 7, nullptr, &jerr) == NATS_OK);
  jsPubAck_Destroy(ack);

  dedupsim::NatsBrokers brokers(server.url(), "theirs");
  dedupsim::ManualClock clock(dedupsim::TimePoint{});
  try {
    brokers.Open(clock, {}, nullptr);
    FAIL("the foreign stream was taken");
  } catch (const dedupsim::BrokerError& e) {
    CHECK(std::string(e.what()).find("stream " + name + " exists and is not dedupsim's") !=
          std::string::npos);
  }
  REQUIRE(js_GetStreamInfo(&si, js, name.c_str(), nullptr, &jerr) == NATS_OK);
  CHECK(si->State.Msgs == 1);
  CHECK(si->Config->Description == nullptr);
  jsStreamInfo_Destroy(si);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
}

// Mutation caught: a kRealBroker trait on a lesson that runs its own simulated broker (it
// would "run" on NATS without taking a delivery from it).
TEST_CASE("a lesson that takes no delivery from a broker refuses a real one: exit 2, and says why",
          "[nats]") {
  TempDir tmp;
  auto r = RunCli({"run", "hung-consumer", "--broker", "nats"}, {"NO_COLOR=1", "TMPDIR=" + tmp.path()});
  CHECK(r.exit_code == dedupsim::kExitUsage);
  CHECK(r.out.empty());
  CHECK(r.err ==
        "dedupsim: hung-consumer runs its deliveries through a simulated broker of its own, so "
        "it has nothing to run on --broker nats\n");
  CHECK(Listing(tmp.path()).empty());  // refused before a server or database was made
}

// Mutation caught: the RequireNatsLibrary call moved after NatsServer::Start (a server
// would be started for a command that cannot talk to it: its folder shows in the log line
// of the pause point, which must never come).
TEST_CASE("without libnats: one line naming the file, exit 3, no server started", "[nats]") {
  TempDir tmp;
  auto r = RunCli({"run", "naive", "--broker", "nats"},
                  {"NO_COLOR=1", "TMPDIR=" + tmp.path(), "DEDUPSIM_LIBNATS=/nonexistent/libnats.so.3.4",
                   "DEDUPSIM_PAUSE_AT=broker-server-started"});
  INFO(r.err);
  CHECK(r.exit_code == dedupsim::kExitDatabase);
  CHECK(SplitLines(r.err).size() == 1);
  CHECK(r.err.find("/nonexistent/libnats.so.3.4") != std::string::npos);
  CHECK(r.err.find("paused at") == std::string::npos);
}

// Mutation caught: linking libnats or librabbitmq into dedupsim (the loader would map them,
// and what they need, into every command).
TEST_CASE("a command on the simulated broker loads neither broker client library", "[nats]") {
  auto r = RunCli({"run", "naive"}, {"NO_COLOR=1", "LD_DEBUG=files"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("file=libsqlite3.so") != std::string::npos);  // the log names what opened
  CHECK(r.err.find("file=libnats") == std::string::npos);
  CHECK(r.err.find("file=librabbitmq") == std::string::npos);
}

}  // namespace nats_test

namespace nats_test {

// Mutations caught: the MAX_DELIVERIES advisory not read (poison-message's gaveUp 0: its
// --check fails); a duplicate publish ack taken as stored (broker-dedup's resendDropped 0);
// the late ack answered from our own books instead of the server's (ack-deadline: NATS
// answers it; a refused ack fails lateAckAccepted). Every figure --check compares is the
// broker's own, per broker (each lesson's expected figures name what NATS does).
// The trace says what was observed (issue 28). Mutations caught: the last nak's result
// "back in the queue for redelivery" (the server gave it up); the give-up not named by its
// message (the stored_ lookup dropped) or not judged wrong; broker-dedup's real wait marked
// as simulated time (MarkRealWait back to MarkTime).
TEST_CASE("the broker lessons on NATS: figures read from the server, each as the lesson expects for NATS",
          "[nats]") {
  TempDir tmp;
  auto r = RunCli({"run", "receive-count", "delivery-tag-key", "poison-message", "content-mismatch",
                   "broker-dedup", "ack-deadline", "--broker", "nats", "--max-deliveries", "3",
                   "--check", "--format", "json", "--trace"},
                  {"NO_COLOR=1", "TMPDIR=" + tmp.path()});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<nlohmann::json> results = JsonLines(r.out);
  REQUIRE(results.size() == 6);
  const nlohmann::json& poison = results[2];
  CHECK(poison["deadLettered"] == 0);
  CHECK(poison["gaveUp"] == 1);
  {
    std::string message;
    std::vector<nlohmann::json> naks;
    std::vector<nlohmann::json> give_ups;
    for (const nlohmann::json& e : poison["events"]) {
      if (e["op"] == "deliver") message = e["key"];
      if (e["op"] == "abandon") naks.push_back(e);
      if (e["op"] == "give-up") give_ups.push_back(e);
    }
    REQUIRE(naks.size() == 3);
    for (const nlohmann::json& e : naks) CHECK(e["result"] == "sent (no reply)");
    REQUIRE(give_ups.size() == 1);
    CHECK(give_ups[0]["key"] == message);
    CHECK(give_ups[0]["delivery"] == 3);
    CHECK(give_ups[0]["actor"] == "broker");
    CHECK(give_ups[0]["verdict"] == "wrong");
  }
  {
    int waited = 0;
    for (const nlohmann::json& e : results[4]["events"]) {
      CHECK(e["kind"] != "clock");
      if (e["kind"] == "waited") waited++;
    }
    CHECK(waited == 1);
  }
  CHECK(poison["broker"]["deliveryCounts"] == nlohmann::json::array({1, 2, 3}));
  CHECK(poison["line"].get<std::string>().find("stopped delivering it after MaxDeliver 3") !=
        std::string::npos);
  const nlohmann::json& dedup = results[4];
  CHECK(dedup["resendDropped"] == 1);
  CHECK(dedup["lateResendDropped"] == 0);
  const nlohmann::json& deadline = results[5];
  CHECK(deadline["inboxBroker"]["deliveryCounts"] == nlohmann::json::array({1, 2}));
  CHECK(deadline["lateAckAccepted"] == true);
  // retention needs a dead letter NATS never makes: refused, with the reason.
  auto refused = RunCli({"run", "retention", "--broker", "nats"}, {"NO_COLOR=1", "TMPDIR=" + tmp.path()});
  CHECK(refused.exit_code == dedupsim::kExitUsage);
  CHECK(refused.err.find("retention cannot run on --broker nats: NATS JetStream keeps no dead letter") !=
        std::string::npos);
}

}  // namespace nats_test

namespace nats_test {

// Mutations caught: NatsSoakQueue::Ack not sending the ack (the server redelivers every
// entry for ever: the soak times out, held false); the counts taken from the consumers'
// books instead of the server (acked would equal the consumers' accepted acks whatever the
// server holds: here both must agree, and deliveries can only exceed entries by what the
// server redelivered after a kill).
TEST_CASE("soak over NATS with SIGKILLed consumers, on SQLite and on PostgreSQL: lost 0, doubled 0, counts from the server",
          "[nats]") {
  TempDir tmp;
  // Searchable by the user a private PostgreSQL server runs as (root runs it as postgres).
  std::filesystem::permissions(tmp.path(), std::filesystem::perms::others_exec,
                               std::filesystem::perm_options::add);
  for (const std::vector<std::string>& backend :
       {std::vector<std::string>{}, std::vector<std::string>{"--backend", "postgres"}}) {
    std::vector<std::string> args{"soak", "--broker", "nats", "--messages", "400", "--seed", "5",
                                  "--timeout-s", "90", "--format", "json"};
    args.insert(args.end(), backend.begin(), backend.end());
    auto r = RunCli(args, {"NO_COLOR=1", "TMPDIR=" + tmp.path()});
    INFO(r.err << r.out);
    REQUIRE(r.exit_code == 0);
    nlohmann::json j = nlohmann::json::parse(r.out);
    CHECK(j["held"] == true);
    CHECK(j["lost"] == 0);
    CHECK(j["doubled"] == 0);
    CHECK(j["kills"].get<int>() > 0);
    CHECK(j["acked"] == 400);  // the server: no entry pending or waiting for an ack
    CHECK(j["unacked"] == 0);
    CHECK(j["deliveries"].get<int>() == 400 + j["redeliveries"].get<int>());
    // acked by processed or skipped: the consumers' own books on NATS (the server does not
    // know why an ack came), counted after the server took the ack, so a consumer killed
    // between the two leaves one ack uncounted. They count acks, not entries: a consumer
    // still working when its AckWait ran out (starved on a loaded machine) acks late, and the
    // server takes that ack as well as the redelivery's (401 against 400 seen at load 11 to
    // 16; with --lease-ms 10, 404 and 407). Each delivery is acked at most once, by the one
    // consumer that holds it, so never more than the deliveries.
    const int booked = j["ackedProcessed"].get<int>() + j["duplicatesSkipped"].get<int>();
    CHECK(booked <= j["deliveries"].get<int>());
    CHECK(booked >= 400 - j["kills"].get<int>());
  }
  CHECK(Listing(tmp.path()).empty());
}

}  // namespace nats_test

namespace nats_test {

// Several machines, on one: consumers started on their own (soak --role consumer), each a
// separate process reaching NATS and PostgreSQL over their sockets, a supervisor, and one
// consumer SIGKILLed mid-run. Mutation caught: the consumers' broker taken from the
// database's table instead of NATS (RunSoakConsumer without NatsSoakDb: the server's
// stream is never acked, the supervisor times out, held false).
TEST_CASE("consumers started separately share a NATS stream with a supervisor, one SIGKILLed: lost 0, doubled 0",
          "[nats]") {
  dedupsim::NatsServer nats = dedupsim::NatsServer::Start();
  dedupsim::ThrowawayCluster pg = dedupsim::ThrowawayCluster::Start();
  const std::vector<std::string> common{"--broker", "nats", "--broker-url", nats.url(),
                                        "--backend", "postgres", "--dsn", pg.conninfo(),
                                        "--pg-schema", "roles", "--timeout-s", "90"};
  std::vector<std::unique_ptr<BackgroundRun>> consumers;
  for (int i = 0; i < 3; ++i) {
    std::vector<std::string> args{"soak", "--role", "consumer"};
    args.insert(args.end(), common.begin(), common.end());
    consumers.push_back(std::make_unique<BackgroundRun>(args, std::vector<std::string>{}));
  }
  std::vector<std::string> args{"soak", "--role", "supervisor", "--messages", "3000", "--format", "json"};
  args.insert(args.end(), common.begin(), common.end());
  dedupsim::testing::CliResult supervisor;
  std::thread run([&] { supervisor = RunCli(args); });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  consumers[0]->Signal(SIGKILL);
  run.join();
  INFO(supervisor.err << supervisor.out);
  REQUIRE(supervisor.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(supervisor.out);
  CHECK(j["held"] == true);
  CHECK(j["lost"] == 0);
  CHECK(j["doubled"] == 0);
  CHECK(j["acked"] == 3000);
  CHECK(j["broker"] == "nats");
  CHECK_FALSE(j.contains("duplicatesSkipped"));  // the consumers know it, not the server
  CHECK(consumers[0]->Wait() == 128 + SIGKILL);
  for (size_t i = 1; i < consumers.size(); ++i) {
    const int code = consumers[i]->Wait();
    INFO(consumers[i]->err());
    CHECK(code == 0);  // it saw the supervisor end the run
  }
}

// Mutation caught: RunThroughBroker publishing workload.orders instead of
// workload.deliveries (the duplicates never go through the broker: sent and delivered 210
// of 300, naive doubled 0; applied once, seen failing).
TEST_CASE("bench --broker nats: the broker delivered and acked every delivery, the database recorded each order once",
          "[nats]") {
  dedupsim::testing::CheckBenchThroughBroker("nats", "", "NATS JetStream 2.9.10");
  // Several instances would share one consumer connection: refused before any server starts.
  TempDir tmp;
  auto refused = RunCli({"bench", "--broker", "nats", "--instances-count", "2"},
                        {"NO_COLOR=1", "TMPDIR=" + tmp.path()});
  CHECK(refused.exit_code == dedupsim::kExitUsage);
  CHECK(refused.err.find("--broker runs one consumer instance") != std::string::npos);
  CHECK(Listing(tmp.path()).empty());
}

// Mutation caught: BrokerMisfit's check of kRealBroker dropped (the lessons that play their
// deliveries themselves would "run on NATS"; seen: duplicate-as-error's check fails, exit 1).
// What must run is the table's (LessonsTheTableRunsOn: its traits), so a new lesson needs
// no edit here. Mutation caught: BrokerMisfit refusing every lesson that has a
// refuses_broker, whatever it answers (seen: broker-dedup and ack-deadline missing from what ran).
TEST_CASE("every lesson on --broker nats runs with its checks held or refuses with exit 2 and why",
          "[nats]") {
  std::vector<std::string> ran = dedupsim::testing::EveryLessonRunsOrRefuses("nats", "");
  CHECK(ran == dedupsim::testing::LessonsTheTableRunsOn(dedupsim::BrokerKind::kNats));
}

}  // namespace nats_test
