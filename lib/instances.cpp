#include "instances.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <functional>
#include <future>
#include <thread>

#include <fmt/format.h>

#include "child_process.h"
#include "crash.h"
#include "pipe_io.h"
#include "trace_json.h"

namespace dedupsim {

namespace {

using Clock = std::chrono::steady_clock;

// on_started runs once the instance has its connection and is about to work: the moment the
// next instance's start_after counts from, so a slow thread or process start on a loaded
// machine cannot let the later instance overtake the earlier one.
InstanceResult RunOne(ScenarioEnv& env, const InstanceTask& task,
                      const std::function<void()>& on_started) {
  auto started = Clock::now();
  InstanceResult result;
  result.name = task.name;
  result.pid = static_cast<int>(getpid());
  Connection db = env.db.Connect();
  db.SetTrace(&env.recorder, task.name);
  on_started();
  result.value = task.body(db);
  result.busy = db.busy();
  result.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started);
  return result;
}

std::vector<InstanceResult> RunAsThreads(ScenarioEnv& env, const std::vector<InstanceTask>& tasks) {
  std::vector<InstanceResult> results(tasks.size());
  std::vector<std::exception_ptr> errors(tasks.size());
  std::vector<std::thread> threads;
  Clock::time_point origin;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (i > 0) std::this_thread::sleep_until(origin + tasks[i].start_after);
    std::promise<Clock::time_point> started;
    std::future<Clock::time_point> started_at = started.get_future();
    threads.emplace_back([&, i, started = std::move(started)]() mutable {
      bool signalled = false;
      try {
        results[i] = RunOne(env, tasks[i], [&] {
          started.set_value(Clock::now());
          signalled = true;
        });
      } catch (...) {
        errors[i] = std::current_exception();
      }
      if (!signalled) started.set_value(Clock::now());
    });
    Clock::time_point at = started_at.get();
    if (i == 0) origin = at;
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
  Clock::time_point origin;
  for (const InstanceTask& task : tasks) {
    if (!children.empty()) std::this_thread::sleep_until(origin + task.start_after);
    int fds[2];
    if (::pipe(fds) != 0) throw DatabaseError(fmt::format("pipe: {}", std::strerror(errno)));
    pid_t pid = ForkChild();  // dies with this process
    if (pid < 0) throw DatabaseError(fmt::format("fork: {}", std::strerror(errno)));
    if (pid == 0) {
      ::close(fds[0]);
      for (const Child& c : children) ::close(c.fd);
      env.recorder.Clear();
      int code = 0;
      try {
        InstanceResult r = RunOne(env, task, [&] {
          WriteAll(fds[1], "S");  // started: the parent times the next instance from here
        });
        nlohmann::json message;
        message["value"] = r.value;
        message["elapsedUs"] = r.elapsed.count();
        message["busyCalls"] = r.busy.calls;
        message["waitedUs"] = r.busy.waited.count();
        message["events"] = EventsToJson(env.recorder.Events());
        WriteAll(fds[1], message.dump());
      } catch (const std::exception& e) {
        WriteAll(STDERR_FILENO, fmt::format("dedupsim: instance {} (pid {}): {}\n", task.name, getpid(), e.what()));
        WriteAll(fds[1], "S");  // in case it failed before starting: never leave the parent waiting
        code = 70;
      }
      ::_exit(code);
    }
    ::close(fds[1]);
    char started = 0;
    while (::read(fds[0], &started, 1) < 0 && errno == EINTR) {
    }
    if (children.empty()) origin = Clock::now();
    children.push_back({pid, fds[0]});
  }

  std::vector<InstanceResult> results;
  std::string failure;
  for (size_t i = 0; i < children.size(); ++i) {
    std::string text = ReadAll(children[i].fd);
    ::close(children[i].fd);
    int status = 0;
    WaitChild(children[i].pid, &status);
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
