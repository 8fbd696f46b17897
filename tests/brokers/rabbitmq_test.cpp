// The `rabbitmq` tests: dedupsim on RabbitMQ. All but one use the fixture's node
// (rabbit_fixture: one node per test run, 12 to 17 s to start) through --broker-url; one
// starts a private node of its own to see it stopped by an interrupt. They fail, never
// skip, without rabbitmq-server or librabbitmq: `sh tools/setup.sh --tests` installs
// rabbitmq-server and librabbitmq-dev.
#include <amqp.h>
#include <amqp_framing.h>
#include <amqp_tcp_socket.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <map>
#include <string>
#include <vector>

#include "world/broker/rabbitmq_broker.h"
#include "broker_support.h"
#include "exit_status.h"

namespace rabbitmq_test {

using dedupsim::testing::BackgroundRun;
using dedupsim::testing::Listing;
using dedupsim::testing::PostLines;
using dedupsim::testing::ProcessesMentioning;
using dedupsim::testing::ProcessesMentioningAfter;
using dedupsim::testing::RabbitUrl;
using dedupsim::testing::RunCli;
using dedupsim::testing::SplitLines;
using dedupsim::testing::TempDir;

// Mutations caught: LoseAck without closing the channel (nothing is requeued: the
// redelivery never comes, exit 3); redelivered taken from our count instead of the
// broker's flag (the first delivery of a resend would light it; here: a constant false
// fails the [false, true] check); the delivery count not read from x-delivery-count (a
// constant 1 fails [1, 2]).
TEST_CASE("run all --broker rabbitmq: the post's six lines, every lost ack a closed channel the broker requeued",
          "[rabbitmq]") {
  auto r = RunCli({"run", "all", "--broker", "rabbitmq", "--broker-url", RabbitUrl(), "--format", "json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> lines = SplitLines(r.out);
  REQUIRE(lines.size() == 6);
  std::vector<std::string> post = PostLines();
  for (size_t i = 0; i < lines.size(); ++i) {
    nlohmann::json j = nlohmann::json::parse(lines[i]);
    INFO(j.dump());
    CHECK(j["line"] == post[i]);
    CHECK(j["broker"]["server"] == "RabbitMQ 3.10.8");
    CHECK(j["broker"]["deliveryCounts"] == nlohmann::json::array({1, 2}));  // x-delivery-count + 1
    CHECK(j["broker"]["redelivered"] == nlohmann::json::array({false, true}));
    // The delivery tag is the channel's: the redelivery came on a new channel, tag 1 again.
    CHECK(j["broker"]["deliveryTags"] == nlohmann::json::array({1, 1}));
  }
}

// Mutation caught: Declared() taking a 406 for the queue being ours (the foreign queue
// would be purged and used: its message gone).
TEST_CASE("on a server of the user's, a queue of dedupsim's name declared by someone else is refused and left as it was",
          "[rabbitmq]") {
  const std::string url = RabbitUrl();
  std::vector<char> text(url.begin(), url.end());
  text.push_back('\0');
  amqp_connection_info info{};
  REQUIRE(amqp_parse_url(text.data(), &info) == AMQP_STATUS_OK);
  amqp_connection_state_t conn = amqp_new_connection();
  amqp_socket_t* socket = amqp_tcp_socket_new(conn);
  REQUIRE(amqp_socket_open(socket, info.host, info.port) == AMQP_STATUS_OK);
  REQUIRE(amqp_login(conn, "/", 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, info.user, info.password)
              .reply_type == AMQP_RESPONSE_NORMAL);
  amqp_channel_open(conn, 1);
  REQUIRE(amqp_get_rpc_reply(conn).reply_type == AMQP_RESPONSE_NORMAL);
  // Someone else's classic queue, with the name dedupsim would give its first queue.
  const std::string name = "theirs-" + std::to_string(::getpid()) + "-1";
  const amqp_table_t none{0, nullptr};
  amqp_queue_declare(conn, 1, amqp_cstring_bytes(name.c_str()), 0, 1, 0, 0, none);
  REQUIRE(amqp_get_rpc_reply(conn).reply_type == AMQP_RESPONSE_NORMAL);
  amqp_basic_properties_t props{};
  REQUIRE(amqp_basic_publish(conn, 1, amqp_cstring_bytes(""), amqp_cstring_bytes(name.c_str()), 0,
                             0, &props, amqp_cstring_bytes("keep me")) == AMQP_STATUS_OK);
  {
    dedupsim::RabbitBrokers brokers(url, "theirs");
    dedupsim::ManualClock clock(dedupsim::TimePoint{});
    try {
      brokers.Open(clock, {}, nullptr);
      FAIL("the foreign queue was taken");
    } catch (const dedupsim::BrokerError& e) {
      CHECK(std::string(e.what()).find("queue " + name + " exists and was not declared by dedupsim") !=
            std::string::npos);
    }
  }
  amqp_queue_declare_ok_t* ok = amqp_queue_declare(conn, 1, amqp_cstring_bytes(name.c_str()), 1, 0, 0, 0, none);
  REQUIRE(ok != nullptr);
  CHECK(ok->message_count == 1);  // its message is still there
  amqp_queue_delete(conn, 1, amqp_cstring_bytes(name.c_str()), 0, 0);
  amqp_channel_close(conn, 1, AMQP_REPLY_SUCCESS);
  amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(conn);
}

// Mutations caught: RabbitNode not registered with run_files (the interrupt thread exits
// and the node, its epmd and its folder stay); the node's epmd started as a daemon (it
// would outlive the run: the process check below finds it, by its environment).
TEST_CASE("an interrupt stops the private RabbitMQ node and its epmd, and removes its folder",
          "[rabbitmq][private-node]") {
  TempDir tmp;
  BackgroundRun run({"run", "naive", "--broker", "rabbitmq"},
                    {"TMPDIR=" + tmp.path(), "DEDUPSIM_PAUSE_AT=broker-server-started", "NO_COLOR=1"});
  REQUIRE_FALSE(run.WaitForLine("paused at broker-server-started").empty());
  // The node (its script, beam, erl_child_setup) and epmd carry the folder or the TMPDIR.
  CHECK(ProcessesMentioning(tmp.path()).size() >= 3);
  run.Signal(SIGINT);
  const int code = run.Wait();
  INFO(run.err());
  CHECK(code == dedupsim::kExitInterrupted);
  std::vector<std::string> left = ProcessesMentioningAfter(tmp.path(), 10000);
  INFO((left.empty() ? std::string() : left.front()));
  CHECK(left.empty());
  CHECK(Listing(tmp.path()).empty());
}

// Mutation caught: the node's pid recorded for the interrupt's cleanup after the fork returns
// instead of under the registry's lock as it is forked (spawn.record not set): an interrupt
// right after the fork leaves the node to its parent-death signal, alive when dedupsim has
// exited (a node script deaf to SIGTERM shows it).
TEST_CASE("an interrupt right after the RabbitMQ node is forked stops it and epmd before exit 130",
          "[rabbitmq][private-node]") {
  TempDir tmp;
  const auto run =
      dedupsim::testing::InterruptRightAfterServerForked("rabbitmq", "DEDUPSIM_RABBITMQ_SERVER", tmp);
  INFO(run.err);
  CHECK(run.code == dedupsim::kExitInterrupted);
  std::vector<std::string> left = ProcessesMentioningAfter(tmp.path(), 0);  // gone at exit
  INFO((left.empty() ? std::string() : left.front()));
  CHECK(left.empty());
  CHECK(Listing(tmp.path()).empty());
}

}  // namespace rabbitmq_test

namespace rabbitmq_test {

// Mutations caught: the dead-letter queue not read (poison-message's and retention's
// deadLettered 0: --check fails); the delivery tag taken from a counter of ours (the tag key
// would process every redelivery: delivery-tag-key's --check for RabbitMQ fails).
// The trace says what was observed, by whom (issue 28). Mutations caught: the last nack's
// result "back in the queue for redelivery" (the queue dead-lettered it); the dead letter's
// arrival recorded as "dead-letter" (drawn as the consumer's act); the consumer's
// basic.reject recorded as "reject" (drawn on the broker's lane); the dead letter's copy not
// read from its header (rabbitmq_broker.cpp `letter.delivery.sequence_number = publish;`
// deleted: the arrival's copy 0).
TEST_CASE("the broker lessons on RabbitMQ: figures read from the broker, each as the lesson expects for RabbitMQ",
          "[rabbitmq]") {
  const std::string url = RabbitUrl();
  auto r = RunCli({"run", "receive-count", "delivery-tag-key", "poison-message", "content-mismatch",
                   "retention", "--broker", "rabbitmq", "--broker-url", url, "--max-deliveries", "3",
                   "--check", "--format", "json", "--trace"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> lines = SplitLines(r.out);
  REQUIRE(lines.size() == 5);
  // Each lesson's settles and dead letters, by op: what was sent, and who did it.
  auto ops = [](const nlohmann::json& lesson) {
    std::map<std::string, std::vector<nlohmann::json>> by_op;
    for (const nlohmann::json& e : lesson["events"]) by_op[e["op"].get<std::string>()].push_back(e);
    return by_op;
  };
  {
    auto by_op = ops(nlohmann::json::parse(lines[2]));  // poison-message
    REQUIRE(by_op["abandon"].size() == 3);
    for (const nlohmann::json& e : by_op["abandon"]) CHECK(e["result"] == "sent (no reply)");
    CHECK(by_op["dead-letter"].empty());  // the queue dead-lettered it, not the consumer
    REQUIRE(by_op["dead-lettered"].size() == 1);
    CHECK(by_op["dead-lettered"][0]["actor"] == "broker");
    CHECK(by_op["dead-lettered"][0]["result"] == "x-first-death-reason delivery_limit");
    CHECK(by_op["dead-lettered"][0]["delivery"] == 3);  // after the third, the limit
  }
  {
    auto by_op = ops(nlohmann::json::parse(lines[3]));  // content-mismatch
    CHECK(by_op["reject"].empty());
    REQUIRE(by_op["dead-letter"].size() == 1);  // the consumer's basic.reject: its settle
    CHECK(by_op["dead-letter"][0]["detail"].get<std::string>().rfind("basic.reject ", 0) == 0);
    REQUIRE(by_op["dead-lettered"].size() == 1);
    CHECK(by_op["dead-lettered"][0]["result"] == "x-first-death-reason rejected");
    // What the client observed (omissions: copies unnumbered, the dead letter's arrival
    // "delivery 1", the reject's result its reason): each publish's copy, read back from the
    // header it carries; basic.reject gets no reply, its reason is the consumer's own; the
    // dead letter numbered by the delivery the consumer rejected, of the copy it was.
    std::vector<int> copies;
    for (const nlohmann::json& e : by_op["send"]) copies.push_back(e["copy"].get<int>());
    CHECK(copies == std::vector<int>{1, 2, 3});
    const nlohmann::json& reject = by_op["dead-letter"][0];
    CHECK(reject["result"] == "sent (no reply)");
    CHECK(reject["detail"].get<std::string>().find(": ContentMismatch") != std::string::npos);
    CHECK(reject["copy"] == 3);
    CHECK(by_op["dead-lettered"][0]["copy"] == 3);
    CHECK(by_op["dead-lettered"][0]["delivery"] == reject["delivery"]);
  }
  nlohmann::json tags = nlohmann::json::parse(lines[1]);
  CHECK(tags["deliveryTagKey"]["deliveryTags"] == nlohmann::json::array({1, 1, 2}));
  CHECK(tags["deliveryTagKey"]["processed"] == nlohmann::json::array({true, false, true}));
  nlohmann::json poison = nlohmann::json::parse(lines[2]);
  CHECK(poison["deadLetterReason"] == "delivery_limit");
  CHECK(poison["broker"]["deliveryCounts"] == nlohmann::json::array({1, 2, 3}));
  // No send-side dedup, no ack deadline within a lesson: refused, with the reason.
  for (const char* lesson : {"broker-dedup", "ack-deadline"}) {
    auto refused = RunCli({"run", lesson, "--broker", "rabbitmq", "--broker-url", url});
    CHECK(refused.exit_code == dedupsim::kExitUsage);
    CHECK(refused.err.find(std::string(lesson) + " cannot run on --broker rabbitmq: RabbitMQ") !=
          std::string::npos);
    CHECK(refused.out.empty());
  }
  // The reason names the measured fact: the one-minute check of consumer_timeout.
  auto late = RunCli({"run", "ack-deadline", "--broker", "rabbitmq", "--broker-url", url});
  CHECK(late.err.find("consumer_timeout once a minute (measured: a 2 s timeout closed the "
                      "channel after 59.8 s)") != std::string::npos);
}

// Mutation caught: RunThroughBroker publishing workload.orders instead of
// workload.deliveries (sent and delivered fall short of the workload's 300, naive doubles
// nothing).
TEST_CASE("bench --broker rabbitmq: the broker delivered and acked every delivery, the database recorded each order once",
          "[rabbitmq]") {
  dedupsim::testing::CheckBenchThroughBroker("rabbitmq", RabbitUrl(), "RabbitMQ 3.10.8");
}

// Mutation caught: ack-deadline's refusal on RabbitMQ dropped (seen: exit 3, "RabbitMQ
// 3.10.8 said it has nothing more to deliver, where the lesson waits for the redelivery").
// What must run is the table's (LessonsTheTableRunsOn: its traits), so a new lesson needs
// no edit here. Mutation caught: BrokerMisfit refusing every lesson that has a
// refuses_broker, whatever it answers (seen: retention missing from what ran).
TEST_CASE("every lesson on --broker rabbitmq runs with its checks held or refuses with exit 2 and why",
          "[rabbitmq]") {
  std::vector<std::string> ran = dedupsim::testing::EveryLessonRunsOrRefuses("rabbitmq", RabbitUrl());
  CHECK(ran == dedupsim::testing::LessonsTheTableRunsOn(dedupsim::BrokerKind::kRabbitMq));
}

}  // namespace rabbitmq_test
