#include "instances.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <thread>

#include <fmt/format.h>

#include "crash.h"
#include "pipe_io.h"
#include "trace_json.h"

namespace dedupsim {

namespace {

using Clock = std::chrono::steady_clock;

InstanceResult RunOne(ScenarioEnv& env, const InstanceTask& task) {
  auto started = Clock::now();
  InstanceResult result;
  result.name = task.name;
  result.pid = static_cast<int>(getpid());
  Connection db = env.db.Connect();
  db.SetTrace(&env.recorder, task.name);
  result.value = task.body(db);
  result.busy = db.busy();
  result.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started);
  return result;
}

std::vector<InstanceResult> RunAsThreads(ScenarioEnv& env, const std::vector<InstanceTask>& tasks) {
  std::vector<InstanceResult> results(tasks.size());
  std::vector<std::exception_ptr> errors(tasks.size());
  std::vector<std::thread> threads;
  auto origin = Clock::now();
  for (size_t i = 0; i < tasks.size(); ++i) {
    std::this_thread::sleep_until(origin + tasks[i].start_after);
    threads.emplace_back([&, i] {
      try {
        results[i] = RunOne(env, tasks[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return results;
}

std::vector<InstanceResult> RunAsProcesses(ScenarioEnv& env, const std::vector<InstanceTask>& tasks) {
  struct Child {
    pid_t pid;
    int fd;
  };
  std::vector<Child> children;
  auto origin = Clock::now();
  for (const InstanceTask& task : tasks) {
    std::this_thread::sleep_until(origin + task.start_after);
    int fds[2];
    if (::pipe(fds) != 0) throw DatabaseError(fmt::format("pipe: {}", std::strerror(errno)));
    pid_t pid = ::fork();
    if (pid < 0) throw DatabaseError(fmt::format("fork: {}", std::strerror(errno)));
    if (pid == 0) {
      ::close(fds[0]);
      for (const Child& c : children) ::close(c.fd);
      env.recorder.Clear();
      int code = 0;
      try {
        InstanceResult r = RunOne(env, task);
        nlohmann::json message;
        message["value"] = r.value;
        message["elapsedUs"] = r.elapsed.count();
        message["busyCalls"] = r.busy.calls;
        message["waitedUs"] = r.busy.waited.count();
        message["events"] = EventsToJson(env.recorder.Events());
        WriteAll(fds[1], message.dump());
      } catch (const std::exception& e) {
        WriteAll(STDERR_FILENO, fmt::format("dedupsim: instance {} (pid {}): {}\n", task.name, getpid(), e.what()));
        code = 70;
      }
      ::_exit(code);
    }
    ::close(fds[1]);
    children.push_back({pid, fds[0]});
  }

  std::vector<InstanceResult> results;
  std::string failure;
  for (size_t i = 0; i < children.size(); ++i) {
    std::string text = ReadAll(children[i].fd);
    ::close(children[i].fd);
    int status = 0;
    while (::waitpid(children[i].pid, &status, 0) < 0 && errno == EINTR) {
    }
    nlohmann::json message = nlohmann::json::parse(text, nullptr, false);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || message.is_discarded()) {
      if (failure.empty()) {
        failure = fmt::format("instance {} (pid {}) {}", tasks[i].name, children[i].pid,
                              DescribeWaitStatus(status));
      }
      continue;
    }
    InstanceResult r;
    r.name = tasks[i].name;
    r.pid = static_cast<int>(children[i].pid);
    r.value = message["value"];
    r.elapsed = std::chrono::microseconds(message.value("elapsedUs", int64_t{0}));
    r.busy.calls = message.value("busyCalls", int64_t{0});
    r.busy.waited = std::chrono::microseconds(message.value("waitedUs", int64_t{0}));
    for (const TraceEvent& e : EventsFromJson(message["events"])) env.recorder.Record(e);
    results.push_back(std::move(r));
  }
  if (!failure.empty()) throw UnplannedDeath(failure);
  return results;
}

}  // namespace

std::vector<InstanceResult> RunInstances(ScenarioEnv& env, const std::vector<InstanceTask>& tasks) {
  return env.options.instances == InstanceMode::kProcesses ? RunAsProcesses(env, tasks)
                                                           : RunAsThreads(env, tasks);
}

}  // namespace dedupsim
