#include "lesson/crash.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>

#include "os/child_process.h"
#include "os/pipe_io.h"
#include "os/this_pid.h"
#include "os/unique_fd.h"
#include "lesson/lock_waiter.h"
#include "store/store.h"
#include "trace/trace_json.h"

namespace dedupsim {

namespace {

// Notes what the dead process left behind, read from the disk before anything opens the
// database, then opens the next connection, as the database's recovery needs (the backend's
// CrashRecovery, read before the process ran), and notes what that open was seen to do:
// the database's steps, each recorded when it was seen, so the files are described before
// the open that recovers from them.
void RecoverAndNote(ScenarioEnv& env, pid_t pid, CrashRecovery& recovery) {
  auto note = [&env](std::string op, std::string what) {
    TraceEvent e;
    e.at_us = env.recorder.MicrosSinceOrigin();
    e.instance = "database";
    e.pid = ThisPid();
    e.kind = "recover";
    e.op = std::move(op);
    e.actor = kActorDatabase;
    e.detail = std::move(what);
    e.result = "ok";
    env.recorder.Record(std::move(e));
  };
  note("on disk before the scenario check's open", recovery.Found(static_cast<int>(pid)));
  // The open Recover makes is the scenario check's (its SELECT is recorded before what it was
  // seen to do), so named, never "the next".
  std::string after = recovery.Recover(env.recorder, static_cast<int>(pid));
  if (!after.empty()) note("on the scenario check's open", std::move(after));
}

// What the server did when the child died, as the database's step: its connection closed,
// its open transaction rolled back, and what the waiter saw of it. Noted after the fact (from
// the waiter's report): nobody measured when the server saw the close, only the kill
// (died_us) and the waiter's answer, which the release came before. Where the waiter waited,
// the note is stamped at that answer, and says so; its backend is the dead child's (the
// server process that rolled it back), so the views put it before the answer it let go on
// (ServerEndsFirst) and know whose locks it freed. Where it did not wait, it is stamped when
// it was written, as before: the waiter saw no release to date.
void NoteServerRelease(ScenarioEnv& env, pid_t pid, bool kill_mode, const CrashReport& report,
                       int64_t died_us) {
  const auto& r = report.server;
  std::string what = fmt::format("the server saw pid {}'s connection close {}", pid,
                                 kill_mode ? "after the SIGKILL" : "at its _exit");
  TraceEvent e;
  e.at_us = env.recorder.MicrosSinceOrigin();
  if (r.waited) {
    what += " and rolled back its open transaction";
    what += fmt::format(
        ", before the waiter's statement, blocked by pid {} on {}, got its answer {:.1f} ms "
        "after the {} (noted at that answer)",
        r.blocked_by.empty() ? 0 : r.blocked_by.front(), r.waited_on,
        static_cast<double>(r.held_after_death_us) / 1000.0, kill_mode ? "kill" : "exit");
    e.at_us = died_us + r.held_after_death_us;
    if (r.blocked_by.size() == 1) e.backend = r.blocked_by.front();
  } else if (r.measured) {
    what += "; the waiter did not wait: the child held no lock it needed at the crash point";
  }
  e.instance = "database";
  e.pid = ThisPid();
  e.kind = "recover";
  e.op = "when the connection closed";
  e.actor = kActorDatabase;
  e.detail = what;
  e.result = "ok";
  env.recorder.Record(std::move(e));
}

}  // namespace

ChildAtHook::ChildAtHook(ScenarioEnv& env, const std::string& instance, const std::string& point,
                         const std::function<void(const Hook& crash)>& delivery,
                         InMemoryEmailProvider* emails, Ending end)
    : env_(env), emails_(emails), end_(end) {
  Pipe report = MakePipe();
  Pipe word;  // the word to exit, for kExitOnWord only
  if (end == Ending::kExitOnWord) word = MakePipe();
  const size_t emails_before = emails ? static_cast<size_t>(emails->sent_count()) : 0;
  child_ = ChildProcess::Fork();  // dies with this process
  if (child_.in_child()) {
    // Child: the delivery opens its own connection. Report, then stand or die at the hook.
    report.read.reset();
    word.write.reset();
    env.recorder.Clear();
    Hook crash = [&, point] {
      // What the child does here, as it knows it: it _exits, or it stands (killed, or
      // stopped, later: the parent notes which from the child's wait status).
      if (end == Ending::kSigkill) {
        env.recorder.Note(instance, "stand", point, "until its parent signals it");
      } else {
        env.recorder.Note(instance, "crash", point, fmt::format("_exit({})", kPlannedExitCode));
      }
      nlohmann::json message;
      message["events"] = EventsToJson(env.recorder.Events());
      nlohmann::json sent = nlohmann::json::array();
      if (emails) {
        auto all = emails->sent();
        for (size_t i = emails_before; i < all.size(); ++i) sent.push_back(all[i]);
      }
      message["emails"] = sent;
      WriteAll(report.write.get(), message.dump() + "\n");
      if (word.read) WaitReadable(word.read.get(), std::chrono::hours(24));  // the word, or EOF
      if (end != Ending::kSigkill) ::_exit(kPlannedExitCode);
      for (;;) ::pause();  // stand at the hook point until the parent's SIGKILL
    };
    int code = 0;
    try {
      delivery(crash);
    } catch (const std::exception& e) {
      std::string text = fmt::format("dedupsim: child {}: {}\n", getpid(), e.what());
      WriteAll(STDERR_FILENO, text);
      code = 70;
    }
    ::_exit(code);  // the delivery finished without reaching the crash point
  }
  report_fd_ = std::move(report.read);
  word_fd_ = std::move(word.write);
}

// The pipes close first (EOF is the word to exit too), then child_ kills (a stopped child
// too) and reaps a child not reaped yet.
ChildAtHook::~ChildAtHook() = default;

bool ChildAtHook::AwaitHook() {
  std::string line = ReadLine(report_fd_.get());
  report_fd_.reset();
  if (line.empty()) return false;
  nlohmann::json message = nlohmann::json::parse(line, nullptr, false);
  if (message.is_discarded()) return false;
  for (const TraceEvent& e : EventsFromJson(message["events"])) env_.recorder.Record(e);
  if (emails_) {
    for (const auto& text : message["emails"]) {
      std::string s = text.get<std::string>();
      auto colon = s.find(": ");
      emails_->Send(s.substr(0, colon), colon == std::string::npos ? "" : s.substr(colon + 2));
    }
  }
  reached_ = true;
  return true;
}

void ChildAtHook::End() {
  if (end_ == Ending::kSigkill) {
    child_.Signal(SIGKILL);
  } else if (word_fd_) {
    WriteAll(word_fd_.get(), "g");
  }
  word_fd_.reset();
}

bool ChildAtHook::Stop() {
  child_.Signal(SIGSTOP);
  siginfo_t info{};
  int r;
  do {
    r = waitid(P_PID, static_cast<id_t>(child_.pid()), &info, WSTOPPED | WEXITED | WNOWAIT);
  } while (r < 0 && errno == EINTR);
  return r == 0 && info.si_code == CLD_STOPPED;
}

std::string ChildAtHook::HowItEnded(std::optional<int> status) {
  if (status && WIFSIGNALED(*status) && WTERMSIG(*status) == SIGKILL) return "killed by SIGKILL";
  return DescribeWaitStatus(status);
}

std::optional<int> ChildAtHook::Reap() {
  if (child_.reaped()) return child_.Wait();
  report_fd_.reset();
  word_fd_.reset();  // EOF is the word too: the child never hangs on it
  return child_.Wait();
}

bool ChildAtHook::DiedAsPlanned() const {
  if (!reached_) return false;
  const std::optional<int> known = child_.status();
  if (!known) return false;
  const int status = *known;
  return end_ == Ending::kSigkill
             ? (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
             : (WIFEXITED(status) && WEXITSTATUS(status) == kPlannedExitCode);
}

nlohmann::ordered_json ServerReleaseFigures(const CrashReport& report) {
  const auto& r = report.server;
  if (!r.measured) return nullptr;
  nlohmann::ordered_json j;
  j["waited"] = r.waited;
  j["waitedOn"] = r.waited ? r.waited_on : "none";
  j["blockedBy"] = r.blocked_by;
  j["heldAfterDeathMs"] = std::round(static_cast<double>(r.held_after_death_us) / 100.0) / 10.0;
  return j;
}

std::string ServerReleasePhrase(const CrashReport& report) {
  const auto& r = report.server;
  if (!r.measured) return "";
  if (!r.waited) return "; it held no lock the waiter needed";
  // Measured: the waiter's answer after the death. The server freed the key before it, at a
  // moment nobody measured: said as the answer's time, never as the release's.
  return fmt::format("; the waiter on its {} got its answer {:.1f} ms after the {}, the server "
                     "having freed it",
                     r.waited_on, static_cast<double>(r.held_after_death_us) / 1000.0,
                     report.how == "SIGKILL" ? "kill" : "exit");
}

CrashReport RunCrashingDelivery(ScenarioEnv& env, const std::string& instance,
                                const std::string& point,
                                const std::function<void(const Hook& crash)>& delivery,
                                InMemoryEmailProvider* emails,
                                const std::function<void(Store&)>& waiter) {
  CrashReport report;
  if (env.options.crash_mode == CrashMode::kThrow) {
    try {
      delivery(CrashHook(point));
    } catch (const SimulatedCrash&) {
      report.crashed = true;
      report.pid = static_cast<int>(getpid());
      report.how = "SimulatedCrash";
    }
    return report;
  }

  const bool kill_mode = env.options.crash_mode == CrashMode::kKill;
  const bool server = OnServer(env);
  // What the database keeps for the next opener to recover (SQLite: the log as it was
  // before the child ran: its frames are not the child's); null on a server.
  const std::unique_ptr<CrashRecovery> recovery = env.backend.WatchForCrash();
  // On a server with a waiter, an exiting child waits at its crash point for the parent's
  // word, as a killed one waits for its SIGKILL.
  ChildAtHook child(env, instance, point, delivery, emails,
                    kill_mode            ? ChildAtHook::Ending::kSigkill
                    : (server && waiter) ? ChildAtHook::Ending::kExitOnWord
                                         : ChildAtHook::Ending::kExitAtOnce);
  const bool reached = child.AwaitHook();
  const pid_t pid = child.pid();
  // The waiter starts while the child stands at its crash point, and the child dies once
  // the server shows the waiter blocked (or the waiter ended without waiting).
  std::optional<LockWaiter> watcher;
  if (server && waiter && reached) {
    watcher.emplace(env.backend, &env.recorder, "waiter", kActorProbe, DeliveryRef{},
                    [waiter](Store& store) {
                      ScopedTransaction tx(store);
                      waiter(store);
                      tx.Rollback();  // a probe: it leaves nothing behind
                    });
    watcher->AwaitBlocked(std::chrono::seconds(30));
  }
  const auto died_at = std::chrono::steady_clock::now();
  if (reached) child.End();
  if (watcher) {
    watcher->Join();  // on a throw, child's destructor kills and reaps it
    report.server.measured = true;
    if (const WatchedStatement* w = watcher->FirstWait()) {
      report.server.waited = true;
      report.server.waited_on = w->waited_on;
      report.server.blocked_by = w->blocking_pids;
      report.server.held_after_death_us =
          std::chrono::duration_cast<std::chrono::microseconds>(w->answered - died_at).count();
    }
  }
  const std::optional<int> known = child.Reap();  // unknown: a death nobody planned
  const int status = known.value_or(-1);          // -1: neither exited nor signalled
  const bool planned =
      known && (kill_mode ? (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && reached)
                          : (WIFEXITED(status) && WEXITSTATUS(status) == kPlannedExitCode));
  if (planned) {
    report.crashed = true;
    report.pid = static_cast<int>(pid);
    report.how = kill_mode ? "SIGKILL" : fmt::format("_exit({})", kPlannedExitCode);
    // Seen by the parent, drawn on the dead process's own lane (its pid). On a server with
    // a waiter, the death the parent caused (the SIGKILL, the word to exit) is stamped when
    // it was caused, not when reaped: before the waiter it freed went on.
    TraceEvent died;
    died.at_us = server && waiter ? env.recorder.MicrosAt(died_at)
                                  : env.recorder.MicrosSinceOrigin();
    died.instance = instance;
    died.pid = static_cast<int>(pid);
    died.kind = "died";
    died.actor = kActorConsumer;
    died.detail = point;
    died.result = fmt::format("pid {} {}", pid, kill_mode ? "killed by SIGKILL" : "called _exit");
    const int64_t died_us = died.at_us;
    env.recorder.Record(std::move(died));
    // SQLite recovers from the files the dead process left; a server database discards the
    // dead connection's open transaction itself, and there are no files of ours to read: it
    // is noted only where a waiter measured it (no waiter: nothing was seen, nothing said).
    if (server) {
      if (report.server.measured) NoteServerRelease(env, pid, kill_mode, report, died_us);
    } else {
      if (recovery) RecoverAndNote(env, pid, *recovery);
    }
    return report;
  }
  if (known && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    report.pid = static_cast<int>(pid);
    return report;  // never reached the crash point
  }
  throw UnplannedDeath(fmt::format("child {} ({}) {} before reaching {}", pid, instance,
                                   DescribeWaitStatus(known), point));
}

}  // namespace dedupsim
