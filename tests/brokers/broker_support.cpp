#include "broker_support.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <chrono>
#include <fstream>
#include <thread>

extern char** environ;

namespace dedupsim::testing {

std::string RabbitUrl() {
  std::ifstream in(DEDUPSIM_RABBIT_URL_FILE);
  std::string url;
  std::getline(in, url);
  INFO("the rabbitmq fixture's url file: " DEDUPSIM_RABBIT_URL_FILE);
  REQUIRE_FALSE(url.empty());
  return url;
}

BackgroundRun::BackgroundRun(const std::vector<std::string>& args,
                             const std::vector<std::string>& env) {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  std::vector<std::string> argv_storage{DEDUPSIM_BINARY};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The test's own entries first: getenv takes the first of a name.
  std::vector<std::string> env_storage(env.begin(), env.end());
  env_storage.emplace_back("NO_COLOR=1");
  for (char** e = environ; *e != nullptr; ++e) env_storage.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  REQUIRE(posix_spawn(&pid_, DEDUPSIM_BINARY, &actions, nullptr, argv.data(), envp.data()) == 0);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  err_ = pipe_fds[0];
}

BackgroundRun::~BackgroundRun() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (err_ >= 0) ::close(err_);
}

std::string BackgroundRun::WaitForLine(const std::string& text) {
  for (;;) {
    auto nl = buffer_.find('\n');
    while (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      seen_ += line + "\n";
      if (line.find(text) != std::string::npos) return line;
      nl = buffer_.find('\n');
    }
    char chunk[512];
    ssize_t n = ::read(err_, chunk, sizeof chunk);
    if (n <= 0) return "";
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

void BackgroundRun::Signal(int signal) { ::kill(pid_, signal); }

int BackgroundRun::Wait() {
  char chunk[512];
  ssize_t n;
  while ((n = ::read(err_, chunk, sizeof chunk)) > 0) buffer_.append(chunk, static_cast<size_t>(n));
  seen_ += buffer_;
  buffer_.clear();
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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
           err[0].find("plays its deliveries itself") != std::string::npos));
  }
  CHECK(lessons > 30);
  return ran;
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
