#include "instances.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <exception>
#include <thread>

#include "child_process.h"
#include "crash.h"
#include "pipe_io.h"
#include "trace_json.h"

namespace dedupsim {

namespace {

using Steady = std::chrono::steady_clock;

// How long an instance waits for an event from the other before going on regardless (the
// other failed, or met no lock): the outcome is then reported as it happened.
constexpr std::chrono::milliseconds kEventTimeout{30000};

int64_t Ns(SteadyTime t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
SteadyTime FromNs(int64_t ns) {
  return SteadyTime(std::chrono::duration_cast<Steady::duration>(std::chrono::nanoseconds(ns)));
}

struct Pipe {
  int read = -1;
  int write = -1;
};

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// The events between the pair, as pipes so one mechanism serves threads and processes:
// reached (first -> second: the hold point's time), blocked (second -> first), ended
// (first -> second).
struct RaceChannels {
  Pipe reached, blocked, ended;
  RaceChannels() {
    for (Pipe* p : {&reached, &blocked, &ended}) {
      int fds[2];
      if (::pipe(fds) != 0) throw DatabaseError(fmt::format("pipe: {}", std::strerror(errno)));
      p->read = fds[0];
      p->write = fds[1];
    }
  }
  ~RaceChannels() { CloseAll(); }
  RaceChannels(const RaceChannels&) = delete;
  RaceChannels& operator=(const RaceChannels&) = delete;
  void CloseAll() {
    for (Pipe* p : {&reached, &blocked, &ended}) {
      CloseFd(p->read);
      CloseFd(p->write);
    }
  }
  // In a child: keep only the ends its role uses, so the other's death reads as EOF.
  void KeepFirstEnds() {
    CloseFd(reached.read);
    CloseFd(blocked.write);
    CloseFd(ended.read);
  }
  void KeepSecondEnds() {
    CloseFd(reached.write);
    CloseFd(blocked.read);
    CloseFd(ended.write);
  }
};

Connection Open(ScenarioEnv& env, const InstanceTask& task) {
  Connection db = env.db.Connect();
  db.SetTrace(&env.recorder, task.name);
  db.KeepLockHistory();
  return db;
}

void Finish(Connection& db, InstanceResult& result, SteadyTime started) {
  result.busy = db.busy();
  db.Close();  // a transaction still open ends here, and its hold with it
  result.locks = db.lock_history();
  result.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(Steady::now() - started);
}

InstanceResult RunFirst(ScenarioEnv& env, const InstanceTask& task, const PairTiming& timing,
                        RaceChannels& ch) {
  InstanceResult result;
  result.name = task.name;
  result.pid = static_cast<int>(getpid());
  bool announced = false;
  auto announce = [&](SteadyTime at) {
    WriteAll(ch.reached.write, fmt::format("{}\n", Ns(at)));
    announced = true;
  };
  try {
    Connection db = Open(env, task);
    SteadyTime started = Steady::now();
    Hook hold_point = [&] {
      SteadyTime reached = Steady::now();
      announce(reached);
      std::this_thread::sleep_until(reached + timing.hold);
      if (timing.stagger < timing.hold && timing.second_blocks) {
        WaitReadable(ch.blocked.read, kEventTimeout);
      }
    };
    result.value = task.body(db, hold_point);
    Finish(db, result, started);
  } catch (...) {
    if (!announced) announce(Steady::now());  // never leave the second waiting
    WriteAll(ch.ended.write, "e");
    throw;
  }
  if (!announced) announce(Steady::now());  // it never reached its hold point
  WriteAll(ch.ended.write, "e");
  return result;
}

InstanceResult RunSecondUnguarded(ScenarioEnv& env, const InstanceTask& task,
                                  const PairTiming& timing, RaceChannels& ch);

InstanceResult RunSecond(ScenarioEnv& env, const InstanceTask& task, const PairTiming& timing,
                         RaceChannels& ch) {
  try {
    return RunSecondUnguarded(env, task, timing, ch);
  } catch (...) {
    WriteAll(ch.blocked.write, "b");  // never leave the first waiting
    throw;
  }
}

InstanceResult RunSecondUnguarded(ScenarioEnv& env, const InstanceTask& task,
                                  const PairTiming& timing, RaceChannels& ch) {
  InstanceResult result;
  result.name = task.name;
  result.pid = static_cast<int>(getpid());
  Connection db = Open(env, task);
  bool told = false;
  db.OnBlocked([&] {
    if (told) return;
    WriteAll(ch.blocked.write, "b");
    told = true;
  });
  // The first instance's transaction ends when it says so (or dies): until then, waiting
  // for its lock uses none of the busy timeout, however long the hold or a stall.
  db.KeepWaitingWhile([&ch] { return !WaitReadable(ch.ended.read, std::chrono::milliseconds(0)); });
  SteadyTime reached = Steady::now();
  if (WaitReadable(ch.reached.read, kEventTimeout)) {
    std::string line = ReadLine(ch.reached.read);
    if (!line.empty()) reached = FromNs(std::stoll(line));
  }
  std::this_thread::sleep_until(reached + timing.stagger);
  if (timing.stagger >= timing.hold) WaitReadable(ch.ended.read, kEventTimeout);
  SteadyTime started = Steady::now();
  result.value = task.body(db, Hook{});
  Finish(db, result, started);
  return result;
}

std::vector<InstanceResult> RunAsThreads(ScenarioEnv& env, const InstanceTask& first,
                                         const InstanceTask& second, const PairTiming& timing) {
  RaceChannels ch;
  std::vector<InstanceResult> results(2);
  std::array<std::exception_ptr, 2> errors;
  std::thread b([&] {
    try {
      results[1] = RunSecond(env, second, timing, ch);
    } catch (...) {
      errors[1] = std::current_exception();
    }
  });
  try {
    results[0] = RunFirst(env, first, timing, ch);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  b.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return results;
}

nlohmann::json LocksToJson(const LockHistory& h) {
  nlohmann::json held = nlohmann::json::array();
  for (const LockHold& x : h.held) {
    held.push_back({Ns(x.acquire_started), Ns(x.acquired), Ns(x.release_started), Ns(x.released)});
  }
  nlohmann::json waits = nlohmann::json::array();
  for (const BlockedWait& w : h.waits) waits.push_back({Ns(w.blocked), Ns(w.resumed)});
  return {{"held", held}, {"waits", waits}};
}

LockHistory LocksFromJson(const nlohmann::json& j) {
  LockHistory h;
  for (const auto& x : j.value("held", nlohmann::json::array())) {
    h.held.push_back({FromNs(x[0].get<int64_t>()), FromNs(x[1].get<int64_t>()),
                      FromNs(x[2].get<int64_t>()), FromNs(x[3].get<int64_t>())});
  }
  for (const auto& w : j.value("waits", nlohmann::json::array())) {
    h.waits.push_back({FromNs(w[0].get<int64_t>()), FromNs(w[1].get<int64_t>())});
  }
  return h;
}

std::vector<InstanceResult> RunAsProcesses(ScenarioEnv& env, const InstanceTask& first,
                                           const InstanceTask& second, const PairTiming& timing) {
  struct Child {
    pid_t pid = -1;
    int fd = -1;
  };
  RaceChannels ch;
  std::array<Child, 2> children;
  std::array<const InstanceTask*, 2> tasks{&first, &second};
  for (size_t i = 0; i < 2; ++i) {
    int fds[2];
    if (::pipe(fds) != 0) throw DatabaseError(fmt::format("pipe: {}", std::strerror(errno)));
    pid_t pid = ForkChild();  // dies with this process
    if (pid < 0) throw DatabaseError(fmt::format("fork: {}", std::strerror(errno)));
    if (pid == 0) {
      // The other instance may be gone when this one writes its last event: a failed write
      // is ignored (WriteAll), never a SIGPIPE death.
      ::signal(SIGPIPE, SIG_IGN);
      ::close(fds[0]);
      for (const Child& c : children) {
        if (c.fd >= 0) ::close(c.fd);
      }
      env.recorder.Clear();
      int code = 0;
      try {
        InstanceResult r;
        if (i == 0) {
          ch.KeepFirstEnds();
          r = RunFirst(env, *tasks[i], timing, ch);
        } else {
          ch.KeepSecondEnds();
          r = RunSecond(env, *tasks[i], timing, ch);
        }
        nlohmann::json message;
        message["value"] = r.value;
        message["elapsedUs"] = r.elapsed.count();
        message["busyCalls"] = r.busy.calls;
        message["waitedUs"] = r.busy.waited.count();
        message["locks"] = LocksToJson(r.locks);
        message["events"] = EventsToJson(env.recorder.Events());
        WriteAll(fds[1], message.dump());
      } catch (const std::exception& e) {
        WriteAll(STDERR_FILENO, fmt::format("dedupsim: instance {} (pid {}): {}\n", tasks[i]->name,
                                            getpid(), e.what()));
        code = 70;
      }
      ::_exit(code);
    }
    ::close(fds[1]);
    children[i] = {pid, fds[0]};
  }
  ch.CloseAll();  // the children hold the ends they use: a death reads as EOF on the other side

  std::vector<InstanceResult> results;
  for (ChildReport& report :
       CollectChildReports(env, {{tasks[0]->name, children[0].pid, children[0].fd},
                                 {tasks[1]->name, children[1].pid, children[1].fd}})) {
    InstanceResult r = std::move(report.result);
    const nlohmann::json& message = report.message;
    r.busy.calls = message.value("busyCalls", int64_t{0});
    r.busy.waited = std::chrono::microseconds(message.value("waitedUs", int64_t{0}));
    r.locks = LocksFromJson(message["locks"]);
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace

std::vector<ChildReport> CollectChildReports(ScenarioEnv& env,
                                             const std::vector<ChildInstance>& children) {
  std::vector<ChildReport> reports;
  std::string failure;
  for (const ChildInstance& child : children) {
    std::string text = ReadAll(child.fd);
    ::close(child.fd);
    int status = 0;
    WaitChild(child.pid, &status);
    nlohmann::json message = nlohmann::json::parse(text, nullptr, false);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || message.is_discarded()) {
      if (failure.empty()) {
        failure = fmt::format("instance {} (pid {}) {}", child.name, child.pid,
                              DescribeWaitStatus(status));
      }
      continue;
    }
    ChildReport report;
    report.result.name = child.name;
    report.result.pid = child.pid;
    report.result.value = message["value"];
    report.result.elapsed = std::chrono::microseconds(message.value("elapsedUs", int64_t{0}));
    for (const TraceEvent& e : EventsFromJson(message["events"])) env.recorder.Record(e);
    report.message = std::move(message);
    reports.push_back(std::move(report));
  }
  if (!failure.empty()) throw UnplannedDeath(failure);
  return reports;
}

std::vector<InstanceResult> RunInstancePair(ScenarioEnv& env, const InstanceTask& first,
                                            const InstanceTask& second, const PairTiming& timing) {
  return env.options.instances == InstanceMode::kProcesses
             ? RunAsProcesses(env, first, second, timing)
             : RunAsThreads(env, first, second, timing);
}

double MsSinceOrigin(const ScenarioEnv& env, SteadyTime t) {
  return static_cast<double>(
             std::chrono::duration_cast<std::chrono::microseconds>(t - env.recorder.origin())
                 .count()) /
         1000.0;
}

}  // namespace dedupsim
