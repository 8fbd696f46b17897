// What the `nats` and `rabbitmq` tests share: the fixture's RabbitMQ node, dedupsim run in
// the background (to interrupt or kill it at a pause point), and the processes left behind.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "support.h"
#include "world/broker/broker.h"

namespace dedupsim::testing {

// The AMQP url of the fixture's node; fails the test when it is not there.
std::string RabbitUrl();

// `dedupsim run naive --broker <broker>` in TMPDIR tmp, its server program (the variable
// server_variable names) a stand-in that ignores SIGTERM and SIGINT for 2 s, then ends: only
// the interrupt's own stop (SIGTERM, its grace, then SIGKILL to the group) ends it sooner; a
// parent-death signal (SIGTERM) does not, so it tells a server the cleanup stopped from one
// left to that signal. The run pauses right after the stand-in is forked and is interrupted
// (SIGINT) once the stand-in runs; returns its exit status and stderr.
struct Interrupted {
  int code = -1;
  std::string err;
};
Interrupted InterruptRightAfterServerForked(const std::string& broker,
                                            const std::string& server_variable,
                                            const TempDir& tmp);

// The processes (pid and command line) whose command line contains text.
std::vector<std::string> ProcessesMentioning(const std::string& text);
// ProcessesMentioning(text), once it is empty, waiting up to limit_ms for it to become so.
std::vector<std::string> ProcessesMentioningAfter(const std::string& text, int limit_ms);
// The names in a folder.
std::vector<std::string> Listing(const std::string& folder);

// Runs `bench --broker <broker> [--broker-url url]` on a small workload (inbox and naive)
// and checks its report's values (never its timings): the broker is named; it was sent,
// delivered and acked every delivery of the workload, duplicates included, and redelivered
// none; each strategy handled every delivery once; the inbox's database holds every order
// once, and the naive one every duplicate doubled: the database's record matches what
// the broker delivered. The database-only figure is reported beside the broker's.
// Runs every lesson `dedupsim list` names with `--broker <broker> [--broker-url url]
// --check`: each either runs and its checks hold (exit 0), or refuses with exit 2 and one
// line naming the lesson and the broker and saying why. Returns the lessons that ran.
std::vector<std::string> EveryLessonRunsOrRefuses(const std::string& broker, const std::string& url);
// The lessons the table says run on kind, in its order: each has the kRealBroker trait and
// no refusal of kind (Scenario::refuses_broker), read from the traits, not through
// BrokerMisfit. The post's six are always among them (REQUIREd).
std::vector<std::string> LessonsTheTableRunsOn(BrokerKind kind);

void CheckBenchThroughBroker(const std::string& broker, const std::string& url,
                             const std::string& server);

}  // namespace dedupsim::testing
