#include "broker_support.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "scenarios.h"

namespace dedupsim::testing {

std::string RabbitUrl() {
  std::ifstream in(DEDUPSIM_RABBIT_URL_FILE);
  std::string url;
  std::getline(in, url);
  INFO("the rabbitmq fixture's url file: " DEDUPSIM_RABBIT_URL_FILE);
  REQUIRE_FALSE(url.empty());
  return url;
}

Interrupted InterruptRightAfterServerForked(const std::string& broker,
                                            const std::string& server_variable,
                                            const TempDir& tmp) {
  TempDir bin;
  const std::string server = bin.path() + "/deaf-server";
  WriteFile(server,
            "#!/bin/sh\ntrap '' TERM INT\n: > \"$(dirname \"$0\")/deaf\"\ni=0\n"
            "while [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done\n");
  REQUIRE(::chmod(server.c_str(), 0700) == 0);
  BackgroundRun run({"run", "naive", "--broker", broker},
                    {"TMPDIR=" + tmp.path(), "DEDUPSIM_PAUSE_AT=broker-server-forked",
                     server_variable + "=" + server, "NO_COLOR=1"});
  REQUIRE_FALSE(run.WaitForLine("paused at broker-server-forked").empty());
  // The stand-in deaf to SIGTERM before the interrupt (it says so with a file).
  for (int i = 0; i < 1000 && !std::filesystem::exists(bin.path() + "/deaf"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(std::filesystem::exists(bin.path() + "/deaf"));
  run.Signal(SIGINT);
  Interrupted result;
  result.code = run.Wait();
  result.err = run.err();
  return result;
}

std::vector<std::string> ProcessesMentioning(const std::string& text) {
  std::vector<std::string> found;
  const std::string self = std::to_string(::getpid());
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return found;
  while (dirent* e = ::readdir(proc)) {
    std::string pid = e->d_name;
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos || pid == self) continue;
    std::ifstream stat("/proc/" + pid + "/stat");
    std::string state;
    std::getline(stat, state);
    auto close = state.rfind(')');
    if (close != std::string::npos && close + 2 < state.size() && state[close + 2] == 'Z') continue;
    std::ifstream in("/proc/" + pid + "/cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (char& c : cmdline) c = c == '\0' ? ' ' : c;
    std::ifstream env_in("/proc/" + pid + "/environ");
    std::string environment((std::istreambuf_iterator<char>(env_in)), std::istreambuf_iterator<char>());
    if (cmdline.find(text) != std::string::npos || environment.find(text) != std::string::npos) {
      found.push_back(pid + ": " + cmdline);
    }
  }
  ::closedir(proc);
  return found;
}

std::vector<std::string> ProcessesMentioningAfter(const std::string& text, int limit_ms) {
  std::vector<std::string> found;
  for (int waited = 0; waited <= limit_ms; waited += 20) {
    found = ProcessesMentioning(text);
    if (found.empty()) return found;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return found;
}

std::vector<std::string> Listing(const std::string& folder) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(folder.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(d);
  }
  return names;
}

std::vector<std::string> EveryLessonRunsOrRefuses(const std::string& broker,
                                                  const std::string& url) {
  auto listed = RunCli({"list"});
  REQUIRE(listed.exit_code == 0);
  std::vector<std::string> ran;
  size_t lessons = 0;
  for (const std::string& line : SplitLines(listed.out)) {
    const std::string lesson = line.substr(0, line.find(' '));
    if (lesson.empty()) continue;
    lessons++;
    std::vector<std::string> args = {"run", lesson, "--broker", broker, "--check"};
    if (!url.empty()) {
      args.push_back("--broker-url");
      args.push_back(url);
    }
    auto r = RunCli(args, {"NO_COLOR=1"});
    INFO(lesson << ": exit " << r.exit_code << "\n" << r.err);
    REQUIRE((r.exit_code == 0 || r.exit_code == 2));
    if (r.exit_code == 0) {
      CHECK_FALSE(r.out.empty());
      ran.push_back(lesson);
      continue;
    }
    CHECK(r.out.empty());
    std::vector<std::string> err = SplitLines(r.err);
    REQUIRE(err.size() == 1);
    CHECK(err[0].rfind("dedupsim: " + lesson + " ", 0) == 0);
    CHECK(err[0].find("--broker " + broker) != std::string::npos);
    // A reason after the broker's name: "...: why", or "so it has nothing to run on ...".
    CHECK((err[0].find("--broker " + broker + ": ") != std::string::npos ||
           err[0].find("a simulated broker of its own") != std::string::npos));
  }
  CHECK(lessons > 30);
  return ran;
}

std::vector<std::string> LessonsTheTableRunsOn(BrokerKind kind) {
  std::vector<std::string> names;
  size_t post = 0;
  for (const Scenario* s : AllScenarios()) {
    const bool refused = s->refuses_broker != nullptr && !s->refuses_broker(kind).empty();
    if ((s->traits & kRealBroker) == 0 || refused) continue;
    names.emplace_back(s->name);
    if (s->in_post) post++;
  }
  REQUIRE(post == 6);
  return names;
}

void CheckBenchThroughBroker(const std::string& broker, const std::string& url,
                             const std::string& server) {
  std::vector<std::string> args = {"bench", "--broker", broker, "--messages", "300", "--seed", "5",
                                   "--strategy", "inbox", "--strategy", "naive", "--format", "json"};
  if (!url.empty()) {
    args.push_back("--broker-url");
    args.push_back(url);
  }
  auto r = RunCli(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  INFO(j.dump());
  CHECK(j["broker"] == broker);
  const int64_t messages = j["messages"];
  const int64_t orders = j["distinctOrders"];
  const int64_t duplicates = j["duplicates"];
  REQUIRE(messages == 300);
  REQUIRE(duplicates > 0);
  REQUIRE(orders + duplicates == messages);
  REQUIRE(j["results"].size() == 2);
  for (const nlohmann::json& e : j["results"]) {
    const nlohmann::json& b = e["throughBroker"];
    INFO(e["strategy"]);
    CHECK(b["server"] == server);
    // What the broker answered: every delivery stored, handed out once and acked.
    CHECK(b["sent"] == messages);
    CHECK(b["accepted"] == messages);
    CHECK(b["dropped"] == 0);
    CHECK(b["delivered"] == messages);
    CHECK(b["acked"] == messages);
    CHECK(b["ackRefused"] == 0);
    CHECK(b["redelivered"] == 0);
    CHECK(b["processed"].get<int64_t>() + b["duplicatesSkipped"].get<int64_t>() == messages);
    CHECK(b["lost"] == 0);
    CHECK(b["reserved"] != 0);
    // The database-only figure of the same strategy, beside the broker's.
    CHECK(b["databaseOnlyMessagesPerSecond"] == e["messagesPerSecond"]);
    CHECK(b["messagesPerSecond"].get<double>() > 0);
    if (e["strategy"] == "inbox") {
      // The database recorded each order once: every duplicate the broker delivered skipped.
      CHECK(b["processed"] == orders);
      CHECK(b["duplicatesSkipped"] == duplicates);
      CHECK(b["doubled"] == 0);
      CHECK(b["reserved"] == b["expectedReserved"]);
      CHECK(b["invariantHeld"] == true);
    } else {
      // naive: every delivery applied, so the database shows each duplicate the broker
      // delivered as one order doubled.
      CHECK(b["processed"] == messages);
      CHECK(b["doubled"] == duplicates);
      CHECK(b["invariantHeld"] == false);
    }
  }
  CHECK(j["promisesHeld"] == true);
}

}  // namespace dedupsim::testing
