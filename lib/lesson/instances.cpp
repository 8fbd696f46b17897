#include "lesson/instances.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <exception>
#include <thread>

#include "lesson/crash.h"
#include "os/child_process.h"
#include "os/pipe_io.h"
#include "os/unique_fd.h"
#include "trace/trace_json.h"

namespace dedupsim {

namespace {

using Steady = std::chrono::steady_clock;

// How long an instance waits for an event from the other before going on regardless (the
// other failed, or met no lock): the outcome is then reported as it happened.
constexpr std::chrono::milliseconds kEventTimeout{30000};

// On the blocked pipe: the second ended (or failed) without being seen blocked.
constexpr const char* kSecondEnded = "ended\n";

int64_t Ns(SteadyTime t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
SteadyTime FromNs(int64_t ns) {
  return SteadyTime(std::chrono::duration_cast<Steady::duration>(std::chrono::nanoseconds(ns)));
}

// The events between the pair, as pipes so one mechanism serves threads and processes:
// reached (first -> second: the hold point's time), blocked (second -> first: the time the
// second was seen blocked or reached its own hold point, or kSecondEnded), ended (first ->
// second); and with a hand-over (relayed), handed (the runner -> second: the hold point's
// time and the hand-over's text, on one line), which the second reads instead of reached.
struct RaceChannels {
  explicit RaceChannels(bool relay) : relayed(relay) {}
  const bool relayed;
  Pipe reached = MakePipe(), blocked = MakePipe(), ended = MakePipe(), handed = MakePipe();
  void CloseAll() {
    for (Pipe* p : {&reached, &blocked, &ended, &handed}) {
      p->read.reset();
      p->write.reset();
    }
  }
  // The runner's process between forks and reports: only the ends of its hand-over.
  void KeepRunnerEnds() {
    for (Pipe* p : {&blocked, &ended}) {
      p->read.reset();
      p->write.reset();
    }
    reached.write.reset();
    handed.read.reset();
    if (!relayed) CloseAll();
  }
  // In a child: keep only the ends its role uses, so the other's death reads as EOF.
  void KeepFirstEnds() {
    reached.read.reset();
    blocked.write.reset();
    ended.read.reset();
    handed.read.reset();
    handed.write.reset();
  }
  void KeepSecondEnds() {
    reached.write.reset();
    handed.write.reset();
    if (relayed) reached.read.reset();
    blocked.read.reset();
    ended.write.reset();
  }
};

// A store's instance: blocked when the store's wait listener is called.
class StoreInstance final : public PairInstance {
 public:
  StoreInstance(std::function<std::unique_ptr<Store>()> open, StoreBody body)
      : store_(open()), body_(std::move(body)) {
    if (LockWaits* waits = store_->lock_waits()) waits->KeepLockHistory();
  }
  void OnBlocked(std::function<void()> on_blocked) override {
    store_->SetWaitListener(std::move(on_blocked));
  }
  // A store that measures its waits has a busy timeout to keep from running out; a server
  // waits without one.
  void KeepWaitingWhile(std::function<bool()> first_pending, int first_ended_fd) override {
    if (LockWaits* waits = store_->lock_waits()) {
      waits->KeepWaitingWhile(std::move(first_pending), first_ended_fd);
    }
  }
  nlohmann::json Run(const Hook& hold_point, const std::string& handed) override {
    return body_(*store_, hold_point, handed);
  }
  void Finish(InstanceResult& result, SteadyTime started) override {
    if (LockWaits* waits = store_->lock_waits()) {
      result.busy = waits->busy();
      waits->Close();  // a transaction still open ends here, and its hold with it
      result.locks = waits->lock_history();
    }
    result.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(Steady::now() - started);
    result.statements = store_->WatchedStatements();
    store_.reset();  // closed before anyone reads the tables
  }

 private:
  std::unique_ptr<Store> store_;
  StoreBody body_;
};

InstanceResult RunFirst(const std::string& name, const PairInstanceOpener& open,
                        const PairTiming& timing, RaceChannels& ch) {
  InstanceResult result;
  result.name = name;
  result.pid = static_cast<int>(getpid());
  bool announced = false;
  auto announce = [&](SteadyTime at) {
    WriteAll(ch.reached.write.get(), fmt::format("{}\n", Ns(at)));
    announced = true;
  };
  try {
    std::unique_ptr<PairInstance> instance = open(0);
    SteadyTime started = Steady::now();
    Hook hold_point = [&] {
      SteadyTime reached = Steady::now();
      announce(reached);
      std::this_thread::sleep_until(reached + timing.hold);
      if (timing.stagger < timing.hold && WaitReadable(ch.blocked.read.get(), kEventTimeout)) {
        // The second waits hold - stagger from the moment it was blocked, however late a
        // starved second got there: on time, that is reached + hold, already passed.
        const std::string line = ReadLine(ch.blocked.read.get());
        if (!line.empty() && std::isdigit(static_cast<unsigned char>(line[0]))) {
          std::this_thread::sleep_until(FromNs(std::stoll(line)) + timing.hold - timing.stagger);
        }
      }
    };
    result.value = instance->Run(hold_point, "");
    instance->Finish(result, started);
  } catch (...) {
    if (!announced) announce(Steady::now());  // never leave the second waiting
    WriteAll(ch.ended.write.get(), "e");
    throw;
  }
  if (!announced) announce(Steady::now());  // it never reached its hold point
  WriteAll(ch.ended.write.get(), "e");
  return result;
}

InstanceResult RunSecondUnguarded(const std::string& name, const PairInstanceOpener& open,
                                  const PairTiming& timing, RaceChannels& ch);

InstanceResult RunSecond(const std::string& name, const PairInstanceOpener& open,
                         const PairTiming& timing, RaceChannels& ch) {
  InstanceResult result;
  try {
    result = RunSecondUnguarded(name, open, timing, ch);
  } catch (...) {
    WriteAll(ch.blocked.write.get(), kSecondEnded);  // never leave the first waiting
    throw;
  }
  // Ended without meeting the first's lock: the first need not wait any longer.
  WriteAll(ch.blocked.write.get(), kSecondEnded);
  return result;
}

InstanceResult RunSecondUnguarded(const std::string& name, const PairInstanceOpener& open,
                                  const PairTiming& timing, RaceChannels& ch) {
  InstanceResult result;
  result.name = name;
  result.pid = static_cast<int>(getpid());
  std::unique_ptr<PairInstance> instance = open(1);
  // Tells the first, once, the time the second was blocked (or reached its hold point).
  bool told = false;
  const Hook tell = [&] {
    if (told) return;
    WriteAll(ch.blocked.write.get(), fmt::format("{}\n", Ns(Steady::now())));
    told = true;
  };
  instance->OnBlocked(tell);
  // The first instance's transaction ends when it says so (or dies): until then, waiting
  // for its lock uses none of the busy timeout, however long the hold or a stall.
  instance->KeepWaitingWhile(
      [&ch] { return !WaitReadable(ch.ended.read.get(), std::chrono::milliseconds(0)); }, ch.ended.read.get());
  SteadyTime reached = Steady::now();
  std::string handed;  // the runner's hand-over, when relayed: after the time and a space
  const int release = ch.relayed ? ch.handed.read.get() : ch.reached.read.get();
  if (WaitReadable(release, kEventTimeout)) {
    std::string line = ReadLine(release);
    if (!line.empty()) reached = FromNs(std::stoll(line));
    if (const size_t space = line.find(' '); space != std::string::npos) {
      handed = line.substr(space + 1);
    }
  }
  std::this_thread::sleep_until(reached + timing.stagger);
  if (timing.stagger >= timing.hold) WaitReadable(ch.ended.read.get(), kEventTimeout);
  SteadyTime started = Steady::now();
  // Where the second meets no lock of the first's, its own hold point is the event the
  // first waits for: the second has done what comes before it (cache-arbiter: its check of
  // the cache), so the first's next step comes after that however late the second ran.
  result.value = instance->Run(timing.second_blocks ? Hook{} : tell, handed);
  instance->Finish(result, started);
  return result;
}

// The runner's part when relayed: once the first has announced its hold point, runs
// hand_over and passes the moment on to the second with what it returned. A first that
// ended without announcing, or a hand-over that threw, passes nothing: the second reads
// EOF and goes on; the error is the runner's to throw.
void HandOverBetween(RaceChannels& ch, const HandOver& hand_over) {
  struct CloseHanded {
    RaceChannels& ch;
    ~CloseHanded() { ch.handed.write.reset(); }
  } close{ch};
  if (!WaitReadable(ch.reached.read.get(), kEventTimeout)) return;
  const std::string line = ReadLine(ch.reached.read.get());
  if (line.empty()) return;
  const std::string text = hand_over();
  WriteAll(ch.handed.write.get(), fmt::format("{} {}\n", line, text));
}

std::vector<InstanceResult> RunAsThreads(const std::array<std::string, 2>& names,
                                         const PairInstanceOpener& open, const PairTiming& timing,
                                         const HandOver& hand_over) {
  RaceChannels ch(static_cast<bool>(hand_over));
  std::vector<InstanceResult> results(2);
  std::array<std::exception_ptr, 3> errors;
  std::thread relay;
  if (hand_over) {
    relay = std::thread([&] {
      try {
        HandOverBetween(ch, hand_over);
      } catch (...) {
        errors[2] = std::current_exception();
      }
    });
  }
  std::thread b([&] {
    try {
      results[1] = RunSecond(names[1], open, timing, ch);
    } catch (...) {
      errors[1] = std::current_exception();
    }
  });
  try {
    results[0] = RunFirst(names[0], open, timing, ch);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  b.join();
  if (relay.joinable()) relay.join();
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

nlohmann::json StatementsToJson(const std::vector<WatchedStatement>& statements) {
  nlohmann::json out = nlohmann::json::array();
  for (const WatchedStatement& s : statements) {
    out.push_back({{"sql", s.sql},
                   {"waited", s.waited},
                   {"waitedOn", s.waited_on},
                   {"waitEvent", s.wait_event},
                   {"blockedBy", s.blocking_pids},
                   {"error", s.error_code},
                   {"rows", s.rows},
                   {"us", s.elapsed.count()},
                   {"waitedUs", s.waited_for.count()}});
  }
  return out;
}

std::vector<WatchedStatement> StatementsFromJson(const nlohmann::json& j) {
  std::vector<WatchedStatement> out;
  for (const auto& s : j) {
    WatchedStatement w;
    w.sql = s.value("sql", "");
    w.waited = s.value("waited", false);
    w.waited_on = s.value("waitedOn", "");
    w.wait_event = s.value("waitEvent", "");
    w.blocking_pids = s.value("blockedBy", std::vector<int>{});
    w.error_code = s.value("error", "");
    w.rows = s.value("rows", int64_t{-1});
    w.elapsed = std::chrono::microseconds(s.value("us", int64_t{0}));
    w.waited_for = std::chrono::microseconds(s.value("waitedUs", int64_t{0}));
    out.push_back(std::move(w));
  }
  return out;
}

std::vector<InstanceResult> RunAsProcesses(ScenarioEnv& env,
                                           const std::array<std::string, 2>& names,
                                           const PairInstanceOpener& open,
                                           const PairTiming& timing, const HandOver& hand_over) {
  RaceChannels ch(static_cast<bool>(hand_over));
  std::vector<ChildInstance> children;  // a child started is killed and reaped on every path
  for (size_t i = 0; i < 2; ++i) {
    Pipe report = MakePipe();
    ChildProcess process = ChildProcess::Fork();  // dies with this process
    if (process.in_child()) {
      // The other instance may be gone when this one writes its last event: a failed write
      // is ignored (WriteAll), never a SIGPIPE death.
      ::signal(SIGPIPE, SIG_IGN);
      report.read.reset();
      for (ChildInstance& c : children) c.report.reset();
      env.recorder.Clear();
      int code = 0;
      try {
        InstanceResult r;
        if (i == 0) {
          ch.KeepFirstEnds();
          r = RunFirst(names[i], open, timing, ch);
        } else {
          ch.KeepSecondEnds();
          r = RunSecond(names[i], open, timing, ch);
        }
        nlohmann::json message;
        message["value"] = r.value;
        message["elapsedUs"] = r.elapsed.count();
        if (r.busy) {
          message["busyCalls"] = r.busy->calls;
          message["waitedUs"] = r.busy->waited.count();
        }
        message["locks"] = LocksToJson(r.locks);
        message["statements"] = StatementsToJson(r.statements);
        message["events"] = EventsToJson(env.recorder.Events());
        WriteAll(report.write.get(), message.dump());
      } catch (const std::exception& e) {
        WriteAll(STDERR_FILENO,
                 fmt::format("dedupsim: instance {} (pid {}): {}\n", names[i], getpid(), e.what()));
        code = 70;
      }
      ::_exit(code);
    }
    children.push_back({names[i], std::move(process), std::move(report.read)});
  }
  // The children hold the ends they use: a death reads as EOF on the other side.
  ch.KeepRunnerEnds();
  if (hand_over) HandOverBetween(ch, hand_over);
  ch.CloseAll();

  std::vector<InstanceResult> results;
  for (ChildReport& report :
       CollectChildReports(env, children)) {
    InstanceResult r = std::move(report.result);
    const nlohmann::json& message = report.message;
    if (message.contains("busyCalls")) {
      r.busy = BusyStats{message["busyCalls"].get<int64_t>(),
                         std::chrono::microseconds(message.value("waitedUs", int64_t{0}))};
    }
    r.locks = LocksFromJson(message["locks"]);
    r.statements = StatementsFromJson(message.value("statements", nlohmann::json::array()));
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace

std::vector<ChildReport> CollectChildReports(ScenarioEnv& env,
                                             std::vector<ChildInstance>& children) {
  std::vector<ChildReport> reports;
  std::string failure;
  for (ChildInstance& child : children) {
    std::string text = ReadAll(child.report.get());
    child.report.reset();
    const std::optional<int> status = child.process.Wait();
    nlohmann::json message = nlohmann::json::parse(text, nullptr, false);
    if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0 || message.is_discarded()) {
      if (failure.empty()) {
        failure = fmt::format("instance {} (pid {}) {}", child.name, child.process.pid(),
                              DescribeWaitStatus(status));
      }
      continue;
    }
    ChildReport report;
    report.result.name = child.name;
    report.result.pid = child.process.pid();
    report.result.value = message["value"];
    report.result.elapsed = std::chrono::microseconds(message.value("elapsedUs", int64_t{0}));
    for (const TraceEvent& e : EventsFromJson(message["events"])) env.recorder.Record(e);
    report.message = std::move(message);
    reports.push_back(std::move(report));
  }
  if (!failure.empty()) throw UnplannedDeath(failure);
  return reports;
}

std::vector<InstanceResult> RunGatedPair(ScenarioEnv& env, const std::array<std::string, 2>& names,
                                         const PairInstanceOpener& open, const PairTiming& timing,
                                         const HandOver& hand_over) {
  return env.options.instances == InstanceMode::kProcesses
             ? RunAsProcesses(env, names, open, timing, hand_over)
             : RunAsThreads(names, open, timing, hand_over);
}

std::unique_ptr<PairInstance> StorePairInstance(std::function<std::unique_ptr<Store>()> open,
                                                StoreBody body) {
  return std::make_unique<StoreInstance>(std::move(open), std::move(body));
}

double MsSinceOrigin(const ScenarioEnv& env, SteadyTime t) {
  return static_cast<double>(
             std::chrono::duration_cast<std::chrono::microseconds>(t - env.recorder.origin())
                 .count()) /
         1000.0;
}

}  // namespace dedupsim
